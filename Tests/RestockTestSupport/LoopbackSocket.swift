import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The blocking loopback sockets of the test relays (``TCPProxy``, ``PostgresWireCut``).
enum LoopbackSocket {
    /// A socket listening on a free port of 127.0.0.1, and that port.
    static func listen() throws -> (socket: Int32, port: Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ProxyError("socket", errno) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(listener, 128) == 0 else { throw ProxyError("bind/listen", errno) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A socket connected to `127.0.0.1:port`; `nil` when it cannot be.
    static func connect(to port: Int) -> Int32? {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else { return nil }
        var target = loopback(port: port)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(upstream)
            return nil
        }
        return upstream
    }

    /// Writes all of `bytes` to `socket`; `false` when the socket failed first.
    static func write(_ bytes: some Collection<UInt8>, to socket: Int32) -> Bool {
        let bytes = Array(bytes)
        var sent = 0
        while sent < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(socket, $0.baseAddress! + sent, bytes.count - sent) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            sent += written
        }
        return true
    }

    /// Accepts connections on `listener` until it is shut down (then closes it), connects each to `127.0.0.1:port`,
    /// and hands the pair to `relay` (`accepted` is told of each connection first); a connection whose target does not
    /// answer is closed.
    static func relayConnections(
        from listener: Int32, to port: Int, accepted: () -> Void = {}, _ relay: (RelayLink) -> Void
    ) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                Glibc.close(listener)
                return
            }
            accepted()
            guard let upstream = connect(to: port) else {
                Glibc.close(client)
                continue
            }
            relay(RelayLink(client: client, upstream: upstream))
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

/// One connection a test relay carries: the client's socket and the one to the target, each read by a pump of its own;
/// the second pump to finish closes both.
final class RelayLink: Sendable {
    let client: Int32
    let upstream: Int32
    private let pumpsRunning = Atomic<Int>(2)

    init(client: Int32, upstream: Int32) {
        self.client = client
        self.upstream = upstream
    }

    /// Ends both connections: each side sees its peer gone.
    func shutdownBoth() {
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(upstream, Int32(SHUT_RDWR))
    }

    /// One pump is done; the last closes the sockets. Returns true for the last.
    @discardableResult
    func pumpFinished() -> Bool {
        guard pumpsRunning.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return false }
        Glibc.close(client)
        Glibc.close(upstream)
        return true
    }
}
