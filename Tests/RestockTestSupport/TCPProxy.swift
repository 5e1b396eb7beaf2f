import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay from a free loopback port to a loopback target port, that can cut every link it carries
/// at once: both sides see their connection reset in the middle of whatever they were sending.
public final class TCPProxy: Sendable {
    private typealias Link = RelayLink

    public let port: Int
    public let targetPort: Int
    private let listener: Int32
    private let links = Mutex<[ObjectIdentifier: Link]>([:])
    private let accepted = Atomic<Int>(0)
    /// While set, every byte in either direction is read and dropped: a network that went silent, with every
    /// connection still open at both ends.
    private let dropping = Atomic<Bool>(false)
    /// While set, the end of a connection (a close, a reset) is not passed on: the other side keeps its connection
    /// open, and what it sends is lost.
    private let holdingEnds = Atomic<Bool>(false)
    /// Bytes read from the connecting clients, toward the target, and from the target, toward them.
    private let fromClients = Atomic<Int>(0), toClients = Atomic<Int>(0)

    /// Listens on a free port of 127.0.0.1 and relays each connection to `127.0.0.1:targetPort`.
    public init(to targetPort: Int) throws {
        self.targetPort = targetPort
        (listener, port) = try LoopbackSocket.listen()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { close() }

    /// `mqtt://127.0.0.1:port`.
    public var url: String { "mqtt://127.0.0.1:\(port)" }
    /// How many connections it has accepted so far.
    public var connectionsAccepted: Int { accepted.load(ordering: .relaxed) }
    /// How many links it carries now.
    public var liveLinks: Int { links.withLock { $0.count } }
    /// How many bytes it has read from the connecting clients so far, toward the target.
    public var bytesFromClients: Int { fromClients.load(ordering: .acquiring) }
    /// How many bytes it has passed on to the connecting clients so far (written to their connections).
    public var bytesToClients: Int { toClients.load(ordering: .acquiring) }

    /// Cuts every link it carries now; new connections are relayed as before. Returns how many it cut.
    @discardableResult
    public func cut() -> Int {
        links.withLock { links in
            for link in links.values { link.shutdownBoth() }
            return links.count
        }
    }

    /// Holds everything from now on (`true`), or relays again (`false`), without closing anything: as a network
    /// partition does. What is sent meanwhile waits (TCP keeps it and delivers it once the network is back), and so does
    /// a close. It used to drop the bytes instead, which TCP never does in the middle of a live connection: a stream
    /// missing bytes broke MQTT's framing, and the store's publishing connection then hung on a packet that never ended.
    public func blackhole(_ on: Bool) { dropping.store(on, ordering: .releasing) }

    /// Holds the end of every connection from now on (`true`), or passes it on again (`false`, and the ends held
    /// meanwhile go through): as when the segment that ends a connection is lost and sent again late. A side whose
    /// peer closed sees its connection open and what it writes vanish, until the hold ends.
    public func holdEnds(_ on: Bool) { holdingEnds.store(on, ordering: .releasing) }

    /// Stops listening and cuts every link.
    public func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        cut()
    }

    private func acceptLoop() {
        LoopbackSocket.relayConnections(from: listener, to: targetPort, accepted: { accepted.add(1, ordering: .relaxed) }) { link in
            links.withLock { $0[ObjectIdentifier(link)] = link }
            Thread.detachNewThread { [self] in pump(link, from: link.client, to: link.upstream) }
            Thread.detachNewThread { [self] in pump(link, from: link.upstream, to: link.client) }
        }
    }

    private func pump(_ link: Link, from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        relay: while true {
            // Held: nothing is read, so it waits in the kernel's buffers (and the sender's), as in a partition.
            while dropping.load(ordering: .acquiring) { usleep(5_000) }
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            if source == link.client { fromClients.add(count, ordering: .releasing) }
            if dropping.load(ordering: .acquiring) {
                // Read just as the hold began: relayed once it ends, in order.
                while dropping.load(ordering: .acquiring) { usleep(5_000) }
            }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + sent, count - sent) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { break relay }
                sent += written
                if destination == link.client { toClients.add(written, ordering: .releasing) }
            }
        }
        while holdingEnds.load(ordering: .acquiring) { usleep(5_000) }
        link.shutdownBoth()
        links.withLock { links in
            if link.pumpFinished() { links[ObjectIdentifier(link)] = nil }
        }
    }
}

public struct ProxyError: Error, CustomStringConvertible {
    let call: String
    let code: Int32
    init(_ call: String, _ code: Int32) {
        self.call = call
        self.code = code
    }
    public var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}
