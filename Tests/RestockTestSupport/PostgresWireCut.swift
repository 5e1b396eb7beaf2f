import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A relay to a PostgreSQL server that, armed, ends the connection of one statement between its answer and the end of
/// its transaction: the window in which a server shutting down (`pg_ctl stop -m fast`) ends a session that ran a
/// statement outside a transaction block. The server commits such a statement at the `Sync` after it, but a backend told
/// to end writes out the statement's rows and `CommandComplete`, which it holds until then, before it goes: the client
/// reads an answer whose transaction never committed (found by an outside trial: two journaled requests acknowledged and
/// lost).
///
/// Armed with a marker, the relay watches the client's messages of each exchange (up to its `Sync`). For the first one
/// that executes a statement whose `Parse` or `Bind` holds the marker (a prepared statement's name, or a text), it sends
/// the server a `Flush` in place of the `Sync`, passes the server's answer on up to its `CommandComplete` (or error), and
/// ends both connections there. The server sees its client gone in the middle of the transaction, and rolls it back.
/// Armed to cut after the end (``Cut/afterItsEnd``), it sends the `Sync`, holds back the whole answer up to the server's
/// `ReadyForQuery`, and ends both connections: the transaction committed, and the client never hears so (the window a
/// server's shutdown leaves between a procedure's commit and its answer: found by an outside trial, requests journaled
/// twice). Everything else is relayed as it is; connections made after the cut are relayed too.
public final class PostgresWireCut: Sendable {
    /// One relayed connection, and whether it is being cut: set by the client's side once it sent the `Flush`, after
    /// which the server's next bytes are the statement's answer.
    private final class Link: Sendable {
        let sockets: RelayLink
        let cutting = Atomic<Bool>(false)
        /// Whether the answer is held back whole, up to the server's `ReadyForQuery` (``Cut/afterItsEnd``).
        let holdingTheAnswer = Atomic<Bool>(false)
        var client: Int32 { sockets.client }
        var server: Int32 { sockets.upstream }

        init(sockets: RelayLink) { self.sockets = sockets }
    }

    public let port: Int
    private let targetPort: Int
    private let listener: Int32
    /// Where a statement is cut: before its transaction ends (the server's answer passed on, the transaction rolled
    /// back), or after (the transaction committed, its answer lost).
    public enum Cut: Sendable {
        /// Its answer reaches the client; its `Sync` never reaches the server.
        case beforeItsEnd
        /// Its `Sync` reaches the server, which ends its transaction; none of the answer reaches the client.
        case afterItsEnd
    }

    /// The marker of the statement to cut, while armed, and where.
    private let marker = Mutex<(bytes: [UInt8], cut: Cut)?>(nil)
    private let cutsMade = Atomic<Int>(0)

    /// Listens on a free port of 127.0.0.1 and relays each connection to the server at `127.0.0.1:targetPort`.
    public init(to targetPort: Int) throws {
        self.targetPort = targetPort
        (listener, port) = try LoopbackSocket.listen()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { shutdown(listener, Int32(SHUT_RDWR)) }

    /// Cuts the next statement executed whose `Parse` or `Bind` message holds `marker` (once), as `cut` says.
    public func arm(marker: String, cut: Cut = .beforeItsEnd) { self.marker.withLock { $0 = (Array(marker.utf8), cut) } }

    /// How many statements it has cut.
    public var cuts: Int { cutsMade.load(ordering: .acquiring) }

    private func acceptLoop() {
        LoopbackSocket.relayConnections(from: listener, to: targetPort) { sockets in
            let link = Link(sockets: sockets)
            Thread.detachNewThread { [self] in relayClient(link) }
            Thread.detachNewThread { [self] in relayServer(link) }
        }
    }

    /// The client's messages, parsed and passed on one by one; the exchange to cut ends in a `Flush`, not its `Sync`.
    private func relayClient(_ link: Link) {
        var pending: [UInt8] = []
        var started = false
        var exchange = (executes: false, marked: false)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        relay: while true {
            let count = buffer.withUnsafeMutableBytes { read(link.client, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            pending += buffer[..<count]
            var forward: [UInt8] = []
            while let message = Self.frontendMessage(in: pending, started: started) {
                pending.removeFirst(message.length)
                let bytes = message.bytes
                guard let type = message.type else {
                    // The start-up phase: an SSL or GSS request is answered with one byte, then the start-up message.
                    started = message.isStartup
                    forward += bytes
                    continue
                }
                switch type {
                case UInt8(ascii: "P"), UInt8(ascii: "B"):
                    if let marker = marker.withLock({ $0 }), Self.contains(bytes, marker.bytes) { exchange.marked = true }
                case UInt8(ascii: "E"):
                    exchange.executes = true
                case UInt8(ascii: "S"):
                    defer { exchange = (false, false) }
                    guard exchange.executes, exchange.marked, let cut = marker.withLock({ armed in armed.take()?.cut }) else { break }
                    // The statement's answer, asked for without ending its transaction (a `Flush`), or with it (its
                    // `Sync`); the client's bytes after it are never sent.
                    link.holdingTheAnswer.store(cut == .afterItsEnd, ordering: .releasing)
                    link.cutting.store(true, ordering: .releasing)
                    _ = LoopbackSocket.write(forward + (cut == .afterItsEnd ? Array(bytes) : [UInt8(ascii: "H"), 0, 0, 0, 4]), to: link.server)
                    break relay
                default:
                    break
                }
                forward += bytes
            }
            guard LoopbackSocket.write(forward, to: link.server) else { break }
        }
        finish(link, shuttingDown: !link.cutting.load(ordering: .acquiring))
    }

    /// The server's bytes, passed on as they come; once cutting, up to the end of the first `CommandComplete` or
    /// `ErrorResponse` only — or none, up to the `ReadyForQuery` that ends the exchange, when holding the answer — and
    /// then both connections end.
    private func relayServer(_ link: Link) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var answer: [UInt8] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(link.server, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            guard link.cutting.load(ordering: .acquiring) else {
                guard LoopbackSocket.write(buffer[..<count], to: link.client) else { break }
                continue
            }
            answer += buffer[..<count]
            let holding = link.holdingTheAnswer.load(ordering: .acquiring)
            if let end = Self.end(of: holding ? [UInt8(ascii: "Z")] : [UInt8(ascii: "C"), UInt8(ascii: "E")], in: answer) {
                // Counted before the client can read the answer and look.
                cutsMade.add(1, ordering: .releasing)
                if !holding { _ = LoopbackSocket.write(answer[..<end], to: link.client) }
                break
            }
        }
        finish(link, shuttingDown: true)
    }

    private func finish(_ link: Link, shuttingDown: Bool) {
        if shuttingDown { link.sockets.shutdownBoth() }
        link.sockets.pumpFinished()
    }

    /// The first whole message of a client's `bytes`: typed once started (a type byte, then a length that counts itself),
    /// untyped before (a length, then a code: the start-up message's is the protocol's version, 3.0).
    private static func frontendMessage(in bytes: [UInt8], started: Bool) -> (type: UInt8?, bytes: ArraySlice<UInt8>, length: Int, isStartup: Bool)? {
        let offset = started ? 1 : 0
        guard bytes.count >= offset + 4 else { return nil }
        let length = offset + Int(bigEndian32(bytes, at: offset))
        guard length >= offset + 4, bytes.count >= length else { return nil }
        let isStartup = !started && length >= 8 && bigEndian32(bytes, at: 4) == 196_608
        return (started ? bytes[0] : nil, bytes[..<length], length, isStartup)
    }

    /// Where the first message of one of `types` in a server's `bytes` ends, if they hold one whole.
    private static func end(of types: [UInt8], in bytes: [UInt8]) -> Int? {
        var offset = 0
        while bytes.count >= offset + 5 {
            let end = offset + 1 + Int(bigEndian32(bytes, at: offset + 1))
            guard bytes.count >= end else { return nil }
            if types.contains(bytes[offset]) { return end }
            offset = end
        }
        return nil
    }

    private static func bigEndian32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func contains(_ bytes: ArraySlice<UInt8>, _ marker: [UInt8]) -> Bool {
        guard !marker.isEmpty, bytes.count >= marker.count else { return false }
        let first = bytes.startIndex
        return (first...(bytes.endIndex - marker.count)).contains { bytes[$0..<$0 + marker.count].elementsEqual(marker) }
    }
}
