import Foundation

/// `restock serve --database postgres://USER[:PASSWORD]@HOST[:PORT][,HOST[:PORT]…]/DATABASE[?sslmode=…&sslrootcert=…]`
/// read into what the store needs (docs/operations.md, "Running on PostgreSQL"): the servers to try in order, the user
/// and password, the database, and TLS.
///
/// Parsed by hand, part by part, because Foundation's `URL` takes neither a list of hosts nor an IPv6 address beside
/// one; every part is checked, and every error is one line that never repeats the password.
package struct DatabaseURL: Sendable, Equatable {
    /// One server: a host name or address (an IPv6 address without its brackets) and a port.
    package struct Server: Sendable, Hashable, CustomStringConvertible {
        package var host: String
        package var port: Int

        package init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// How the connection is encrypted: libpq's `sslmode`, those that make sense for a server (`prefer` and `allow`
    /// would fall back to plain text without saying so, and are refused).
    package enum TLSMode: String, Sendable, CaseIterable {
        /// Plain TCP (the default: a database on loopback or a private network).
        case disable
        /// Encrypted; the server's certificate is not checked.
        case require
        /// Encrypted; the certificate must be signed by a trusted authority (`sslrootcert`, or the system's).
        case verifyCA = "verify-ca"
        /// As `verify-ca`, and the certificate must name the host.
        case verifyFull = "verify-full"
    }

    /// The servers, tried in order for the one that takes writes.
    package var servers: [Server]
    package var user: String
    /// The password of the URL, if it gives one (else `RESTOCK_DATABASE_PASSWORD`, or none).
    package var password: String?
    package var database: String
    package var tls: TLSMode = .disable
    /// The certificate authorities to trust (`sslrootcert`, a PEM file), for `verify-ca` and `verify-full`.
    package var rootCertificates: String?

    /// PostgreSQL's port when a server names none.
    package static let defaultPort = 5432
    /// The most servers one URL may list.
    package static let maximumServers = 16

    /// A URL that cannot be read: what is wrong, in one line without the password.
    package struct Invalid: Error, CustomStringConvertible, Equatable {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// Reads `text`.
    /// - Throws: ``Invalid`` saying which part is wrong.
    package init(parsing text: String) throws(Invalid) {
        guard text.utf8.count <= 4_096 else { throw Invalid("--database is longer than 4096 bytes") }
        guard let schemeEnd = text.range(of: "://") else {
            throw Invalid("--database must be a URL such as postgres://user@host:5432/database")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw Invalid("--database must start with postgres:// or postgresql://, not \(Self.quoted(String(text[..<schemeEnd.upperBound])))")
        }
        var rest = text[schemeEnd.upperBound...]
        // A password with a raw ? or # would be cut there, and its end read as parameters, which errors quote: refused
        // without quoting anything (found by an outside trial: part of a password was printed).
        if let lastAt = rest.lastIndex(of: "@"), let mark = rest.firstIndex(where: { $0 == "?" || $0 == "#" }), mark < lastAt {
            throw Invalid("--database has a ? or # before its last @: percent-encode ?, #, @ and / in the user or password (%3F, %23, %40, %2F)")
        }
        guard !rest.contains("#") else { throw Invalid("--database holds a #: percent-encode it (%23)") }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let at = rest.lastIndex(of: "@") else {
            throw Invalid("--database must name a user: postgres://user@host:5432/database")
        }
        let credentials = rest[..<at]
        let location = rest[rest.index(after: at)...]
        let (user, password) = try Self.credentials(credentials)
        guard let slash = location.firstIndex(of: "/") else {
            throw Invalid("--database must name a database after the host: postgres://user@host:5432/database")
        }
        self.user = user
        self.password = password
        self.servers = try Self.servers(location[..<slash])
        self.database = try Self.decoded(location[location.index(after: slash)...], part: "the database name")
        guard !database.isEmpty else { throw Invalid("--database must name a database after the host: postgres://user@host:5432/database") }
        try readQuery(query)
    }

    /// The user and the password, percent-decoded.
    private static func credentials(_ text: Substring) throws(Invalid) -> (String, String?) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let user = try decoded(parts[0], part: "the user")
        guard !user.isEmpty else { throw Invalid("--database must name a user: postgres://user@host:5432/database") }
        guard parts.count == 2 else { return (user, nil) }
        // Never quoted in an error: it is a password.
        guard let password = String(parts[1]).removingPercentEncoding else {
            throw Invalid("--database's password has a % not followed by two hexadecimal digits")
        }
        return (user, password.isEmpty ? nil : password)
    }

    /// `host[:port]`, comma-separated; an IPv6 address in brackets.
    private static func servers(_ text: Substring) throws(Invalid) -> [Server] {
        let entries = text.split(separator: ",", omittingEmptySubsequences: false)
        guard entries.count <= maximumServers else { throw Invalid("--database lists more than \(maximumServers) servers") }
        var servers: [Server] = []
        for entry in entries {
            servers.append(try server(entry))
        }
        return servers
    }

    private static func server(_ entry: Substring) throws(Invalid) -> Server {
        guard !entry.isEmpty else { throw Invalid("--database has an empty host in its list of servers") }
        var host: Substring
        var port: Substring?
        if entry.hasPrefix("[") {
            guard let close = entry.firstIndex(of: "]") else { throw Invalid("--database has an IPv6 address without its closing ]: \(quoted(String(entry)))") }
            host = entry[entry.index(after: entry.startIndex)..<close]
            let after = entry[entry.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Invalid("--database has something after the IPv6 address \(quoted(String(entry))) that is not :PORT") }
                port = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw Invalid("--database has an IPv6 address that is not one: \(quoted(String(entry)))")
            }
        } else {
            let parts = entry.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            port = parts.count == 2 ? parts[1] : nil
            let allowed = host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }
            guard !host.isEmpty, allowed else { throw Invalid("--database has a host that is not a name or an address: \(quoted(String(entry)))") }
        }
        guard let port else { return Server(host: String(host), port: defaultPort) }
        guard (1...5).contains(port.count), port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(port), (1...65_535).contains(number) else {
            throw Invalid("--database's port must be 1 to 65535, not \(quoted(String(port)))")
        }
        return Server(host: String(host), port: number)
    }

    /// `sslmode` and `sslrootcert`; any other parameter is refused, so that a misspelt one is not ignored.
    private mutating func readQuery(_ query: Substring) throws(Invalid) {
        guard !query.isEmpty else { return }
        var seen: Set<String> = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard parts.count == 2 else { throw Invalid("--database's parameter \(Self.quoted(name)) has no value (name=value)") }
            let value = try Self.decoded(parts[1], part: "the parameter \(Self.quoted(name))")
            guard seen.insert(name).inserted else { throw Invalid("--database gives \(Self.quoted(name)) twice") }
            switch name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw Invalid("--database's sslmode must be one of \(modes), not \(Self.quoted(value))")
                }
                tls = mode
            case "sslrootcert":
                guard !value.isEmpty else { throw Invalid("--database's sslrootcert must name a file") }
                rootCertificates = value
            default:
                throw Invalid("--database has a parameter the store does not know: \(Self.quoted(name)) (it knows sslmode and sslrootcert)")
            }
        }
        if rootCertificates != nil, tls == .disable || tls == .require {
            throw Invalid("--database's sslrootcert needs sslmode=verify-ca or verify-full")
        }
    }

    private static func decoded(_ text: Substring, part: String) throws(Invalid) -> String {
        guard let value = String(text).removingPercentEncoding else {
            throw Invalid("--database's \(part) has a % not followed by two hexadecimal digits")
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw Invalid("--database's \(part) holds a control character")
        }
        return value
    }

    /// `value` for an error: quoted, control characters escaped, cut at 64 characters.
    static func quoted(_ value: String) -> String {
        let escaped = value.unicodeScalars.prefix(64).map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
        return "\"\(escaped)\(value.unicodeScalars.count > 64 ? "…" : "")\""
    }

    /// The URL without its password, as logs, errors and /readyz name the database.
    package var redacted: String {
        let list = servers.map(\.description).joined(separator: ",")
        let parameters = tls == .disable ? "" : "?sslmode=\(tls.rawValue)"
        return "postgres://\(user)@\(list)/\(database)\(parameters)"
    }
}
