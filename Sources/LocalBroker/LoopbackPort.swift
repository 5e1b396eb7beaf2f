#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP port on 127.0.0.1 that nothing listens on right now, chosen by the kernel (bind to port 0).
public func freeLoopbackPort() throws -> Int {
    let (fd, port) = try boundLoopbackSocket()
    close(fd)
    return port
}

/// A TCP socket bound to a port of 127.0.0.1 that the kernel chose, and that port. The caller owns the socket:
/// it may `listen` on it (a test's silent broker), and closes it.
public func boundLoopbackSocket() throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw PortError.socket(errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else {
        let error = errno
        close(fd)
        throw PortError.socket(error)
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A port of 127.0.0.1 that refuses every connection for as long as this lives: bound and never listened on, so
/// that no other process (a broker another test starts) can take it meanwhile, as it could a ``freeLoopbackPort()``.
public final class RefusingLoopbackPort: Sendable {
    /// The port.
    public let port: Int
    private let descriptor: Int32

    /// Binds the port.
    public init() throws {
        (descriptor, port) = try boundLoopbackSocket()
    }

    deinit { close(descriptor) }
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
public func isListening(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// A socket call failed, with its errno.
public enum PortError: Error { case socket(Int32) }
