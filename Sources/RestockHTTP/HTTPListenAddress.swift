/// Where the operator's HTTP endpoint listens (`restock serve --http HOST:PORT`): an IPv4 address, a bracketed IPv6
/// address or a host name, and a port (0 for one the system picks, named in the log).
public struct HTTPListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host to bind, without brackets.
    public let host: String
    /// The port, 0 through 65535.
    public let port: Int

    /// Parses `HOST:PORT` (`127.0.0.1:9090`, `[::1]:9090`, `localhost:9090`, `0.0.0.0:9090`).
    /// - Throws: ``HTTPListenAddressError`` with one sentence saying what is wrong.
    public init(parsing text: String) throws(HTTPListenAddressError) {
        let host: Substring, port: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw .init(text) }
            port = rest.dropFirst()
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { throw .init(text) }
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw .init(text) }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            let valid = labels.allSatisfy { label in
                (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                    && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            }
            guard !host.isEmpty, valid else { throw .init(text) }
        }
        guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(port), number <= 65_535
        else { throw .init(text) }
        self.host = String(host)
        self.port = number
    }

    /// `host` and `port` as they are (an address a server has bound).
    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, with an IPv6 host in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A `--http` value that is not `HOST:PORT`.
public struct HTTPListenAddressError: Error, Sendable, CustomStringConvertible {
    /// The value given.
    public let value: String

    init(_ value: String) { self.value = value }

    /// One line: what is expected, and what was given.
    public var description: String {
        "--http must be HOST:PORT with a port from 0 to 65535, such as 127.0.0.1:9090 or [::1]:9090, not \(String(reflecting: String(value.prefix(40))))"
    }
}
