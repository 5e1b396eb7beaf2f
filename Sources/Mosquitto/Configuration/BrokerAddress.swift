/// Where the broker listens: a host and port, in plain TCP or TLS.
///
/// Made with ``hostname(_:port:)``, ``tls(_:port:)`` or ``init(url:)`` (`mqtt://host:port`, `mqtts://host:port`).
public struct BrokerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The MQTT port over plain TCP.
    public static let defaultPort = 1883
    /// The MQTT port over TLS.
    public static let defaultTLSPort = 8883

    private enum Transport: Sendable, Hashable {
        case plain(host: String, port: Int)
        case tls(host: String, port: Int)
    }

    private let transport: Transport

    private init(_ transport: Transport) { self.transport = transport }

    /// A broker over plain TCP.
    public static func hostname(_ host: String, port: Int = defaultPort) -> BrokerAddress {
        BrokerAddress(.plain(host: host, port: port))
    }

    /// A broker over TLS.
    public static func tls(_ host: String, port: Int = defaultTLSPort) -> BrokerAddress {
        BrokerAddress(.tls(host: host, port: port))
    }

    /// The port written after the colon of `url`: digits only and no leading zero, as every port and number of the command
    /// line is read (`+1883` was taken, and `[::1]:+1883` and `:01883` still were: outside trials).
    private static func port(_ digits: Substring, of url: String) throws(MQTTError) -> Int {
        guard !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }), digits == "0" || digits.first != "0",
            let number = Int(digits)
        else {
            throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) has a bad port")
        }
        return number
    }

    /// Parses `mqtt://host[:port]` or `mqtts://host[:port]`; an IPv6 host goes in brackets.
    /// - Throws: ``MQTTError/invalidConfiguration(_:)`` naming what is wrong.
    public init(url: String) throws(MQTTError) {
        let usesTLS: Bool
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            usesTLS = false
            rest = url.dropFirst("mqtt://".count)
        } else if url.hasPrefix("mqtts://") {
            usesTLS = true
            rest = url.dropFirst("mqtts://".count)
        } else {
            throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) must start with mqtt:// or mqtts://")
        }
        let authority = rest.hasSuffix("/") ? rest.dropLast() : rest
        // MQTT has no path, query or fragment: say so, rather than read `host:1/path` as a bad port.
        // Anywhere, even first: `mqtts://?:1883:1883` was read as the host `?:1883`, whose description then did not
        // parse back (found by BrokerURLFuzz).
        if let extra = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            let what = switch authority[extra] { case "/": "a path"; case "?": "a query"; default: "a fragment" }
            // `mqtt://a:1;mqtt://b:2` or `mqtt://a:1 mqtt://b:2`: a list with the wrong separator.
            let advice = authority[extra...].contains("//") ? "to give several brokers, separate their URLs with commas" : "give only mqtt://host:port"
            // Quoted: what follows may hold a newline or anything else (found by BrokerURLFuzz), and an error is one line.
            throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) has \(what) \(MQTTError.quoted(String(authority[extra...]))): \(advice)")
        }
        var host = Substring(authority)
        var port = usesTLS ? Self.defaultTLSPort : Self.defaultPort
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) has an unclosed [")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) has a bad port")
                }
                port = try Self.port(after.dropFirst(), of: url)
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            port = try Self.port(authority[authority.index(after: colon)...], of: url)
        }
        guard !host.isEmpty, !host.contains("/"), !host.contains("@") else {
            throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) has no usable host")
        }
        // Brackets only around an IPv6 address, and nothing a resolver cannot take (libmosquitto would cut the
        // host at a NUL): printable ASCII, no spaces.
        // An IPv6 address only in brackets, and brackets only around one: `host:1:2` was read as the host `host:1`, which
        // failed only at its lookup, exit 1, after serve had made its data directory, and `::1:1883` as `[::1]:1883` (found
        // by an outside trial).
        guard !host.contains("["), !host.contains("]"), authority.hasPrefix("[") == host.contains(":"),
            host.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
        else {
            throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) has a bad host: use a name, an IPv4 address, or an IPv6 address in []")
        }
        // A name the resolver takes: it failed only at the lookup, exit 1 (found by an outside trial, 300 characters).
        guard host.utf8.count <= 253 else {
            throw .invalidConfiguration("broker URL \(MQTTError.quoted(url)) has a bad host: longer than 253 characters, the longest a host name can be")
        }
        guard (1...65_535).contains(port) else {
            throw .invalidConfiguration("broker port \(port) is outside 1-65535")
        }
        self.init(usesTLS ? .tls(host: String(host), port: port) : .plain(host: String(host), port: port))
    }

    /// The host name or address.
    public var host: String {
        switch transport {
        case .plain(let host, _), .tls(let host, _): host
        }
    }

    /// The TCP port.
    public var port: Int {
        switch transport {
        case .plain(_, let port), .tls(_, let port): port
        }
    }

    /// Whether the connection uses TLS.
    public var usesTLS: Bool {
        if case .tls = transport { return true }
        return false
    }

    /// The address as a URL.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(usesTLS ? "mqtts" : "mqtt")://\(shownHost):\(port)"
    }
}
