#if canImport(Glibc)
import Glibc
#endif
import Deadlines
import Foundation
import LocalBroker
import RestockTestSupport
import Testing

/// A plain TCP connection to a loopback port, for what an HTTP client library would not do: stay silent, send a head
/// byte by byte, never close.
final class RawConnection: Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawConnectionError(what: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw RawConnectionError(what: "connect: \(errno)")
        }
    }

    deinit { close(fd) }

    /// Sends all of `bytes`; `false` when the peer has gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads what has come within `milliseconds`: the bytes, and whether the peer closed (end of file or reset).
    func read(waiting milliseconds: Int32) -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&descriptor, 1, received.isEmpty ? milliseconds : 50) > 0 {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return (received, true) }
            received += buffer[..<n]
        }
        return (received, false)
    }

    /// Waits, within `seconds`, for the peer to close; returns everything read meanwhile.
    func waitForClose(within seconds: Double) async throws -> String {
        let start = ContinuousClock.now
        var text: [UInt8] = []
        while ContinuousClock.now - start < .milliseconds(Int64(seconds * 1000)) {
            let (bytes, closed) = read(waiting: 100)
            text += bytes
            if closed { return String(decoding: text, as: UTF8.self) }
            await Task.yield()  // read(waiting:) has waited up to 100 ms for the peer already
        }
        throw DeadlineExceeded(what: "the server to close the connection (read so far: \(String(decoding: text.prefix(200), as: UTF8.self)))", seconds: seconds)
    }
}

extension RawConnection {
    /// Waits, within `seconds`, until the server has let the connection go altogether, not merely closed its side (a
    /// half-closed server still reads, and so takes what is sent; a closed one answers it with a reset).
    func waitUntilReleased(within seconds: Double) async throws {
        try await waitUntil("the server to release the connection", within: seconds, pollEvery: .milliseconds(100)) {
            !self.send("x")
        }
    }
}

struct RawConnectionError: Error { let what: String }

/// Issue 32, item 1: the HTTP port cannot take the descriptors the broker connection needs — real sockets against a real
/// `restock serve --http`, with its limits shortened by `RESTOCK_TEST_HTTP_LIMITS`.
@Suite("The HTTP port's limits", .serialized, .timeLimit(.minutes(3)))
struct HTTPHardeningTests {
    func store(_ limits: String) async throws -> (MosquittoBroker, StoreProcess, Int) {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--http", "127.0.0.1:0"], environment: ["RESTOCK_TEST_HTTP_LIMITS": limits])
        try await store.start()
        let url = try await store.httpURL()
        return (broker, store, Int(url.split(separator: ":").last!)!)
    }

    @Test("silent connections, a head sent too slowly and a keep-alive connection left idle are closed, and counted")
    func timeouts() async throws {
        let (broker, store, port) = try await store("head=1,idle=2")
        _ = broker
        let silent = try (0..<5).map { _ in try RawConnection(port: port) }
        for connection in silent { _ = try await connection.waitForClose(within: 10) }

        // A head that never ends, a byte every 200 ms: closed about a second after it began, bytes or not.
        let slow = try RawConnection(port: port)
        let started = ContinuousClock.now
        #expect(slow.send("GET /livez HTTP/1.1\r\nHost: x\r\n"))
        var closed = false
        while !closed, ContinuousClock.now - started < .seconds(8) {
            if !slow.send("X") { break }
            closed = slow.read(waiting: 200).closed
        }
        #expect(closed && ContinuousClock.now - started < .seconds(6), "the slow head was not cut off in time")

        // Keep-alive: one answer, then closed after 2 s idle.
        let idle = try RawConnection(port: port)
        #expect(idle.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"))
        let answered = ContinuousClock.now
        // Within 20 s: beside the whole run (and two other stores applying 40,000 requests each), it was still open 8 s
        // after its answer once; the bound costs a passing run nothing.
        let text = try await idle.waitForClose(within: 20)
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(ContinuousClock.now - answered >= .milliseconds(1_500), "closed before the idle timeout")

        try await waitUntil("the gauge to come back to the scrape alone", within: 10) {
            let metrics = try await httpGet("http://127.0.0.1:\(port)/metrics").body
            let timedOut = metrics.split(separator: "\n").first { $0.hasPrefix("restock_http_connections_timed_out_total ") }
                .flatMap { Double($0.split(separator: " ")[1]) } ?? 0
            // The five silent ones, the slow head, the idle one (and maybe earlier scrapes' connections, idle).
            return metrics.contains("restock_http_connections 1") && timedOut >= 7
        }
        #expect(store.log.contains("the HTTP endpoint holds at most"), "\(store.log)")
        try await store.send(SIGTERM)
    }

    @Test("restock_http_connections counts the connections open")
    func gauge() async throws {
        let (broker, store, port) = try await store("head=30,idle=30")
        _ = broker
        var open = try (0..<5).map { _ in try RawConnection(port: port) }
        try await waitUntil("the gauge to count them and the scrape", within: 20) {
            (try await httpGet("http://127.0.0.1:\(port)/metrics").body).contains("restock_http_connections 6")
        }
        open.removeAll()
        try await waitUntil("the gauge to count the scrape alone", within: 20) {
            (try await httpGet("http://127.0.0.1:\(port)/metrics").body).contains("restock_http_connections 1")
        }
        try await store.send(SIGTERM)
    }

    @Test("a request with 600 KB of headers is answered 400 and its connection closed, though the client never closes it")
    func hugeHead() async throws {
        let (broker, store, port) = try await store("head=5,idle=60")
        _ = broker
        var connections: [RawConnection] = []
        for _ in 0..<5 {
            let connection = try RawConnection(port: port)
            _ = connection.send("GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 600_000) + "\r\n\r\n")
            connections.append(connection)
        }
        for connection in connections {
            let text = try await connection.waitForClose(within: 10)
            #expect(text.hasPrefix("HTTP/1.1 400"), "\(text.prefix(100))")
            try await connection.waitUntilReleased(within: 10)
        }
        try await waitUntil("only the scrape open", within: 10) {
            (try await httpGet("http://127.0.0.1:\(port)/metrics").body).contains("restock_http_connections 1")
        }
        try await store.send(SIGTERM)
    }

    @Test("connections past the cap are answered 503 and closed; /readyz answers again once the others go")
    func cap() async throws {
        let (broker, store, port) = try await store("head=5,connections=6")
        _ = broker
        // Ten at once: six are held (and closed when their head does not come), four answered 503 and closed at once,
        // whichever the server happens to take first.
        let connections = try (0..<10).map { _ in try RawConnection(port: port) }
        var answers: [String] = []
        for connection in connections { answers.append(try await connection.waitForClose(within: 20)) }
        #expect(answers.count { $0.hasPrefix("HTTP/1.1 503") && $0.contains("too many HTTP connections") } == 4, "\(answers)")
        #expect(answers.count(where: \.isEmpty) == 6, "\(answers)")
        let ready = try await httpGet("http://127.0.0.1:\(port)/readyz")
        #expect(ready.status == 200, "\(ready.body)")
        let metrics = try await httpGet("http://127.0.0.1:\(port)/metrics").body
        #expect(metrics.contains("restock_http_connections_refused_total 4"), "\(metrics)")
        #expect(store.log.contains("refused an HTTP connection"), "\(store.log)")
        try await store.send(SIGTERM)
    }
}
