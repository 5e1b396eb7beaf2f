import Foundation
import RestockTestSupport
import Synchronization
import Deadlines

/// The C ceiling: `restock-ceiling` (Benchmarks/MQTTCeiling/ceiling.c), built beside `restock-bench` by
/// `make bench`. One run publishes `count` QoS 1 messages of `size` bytes with up to 1,000 in flight and
/// counts them at a QoS 1 subscriber of its own, through the broker given; it fails unless exactly `count`
/// arrive, each once.
enum CeilingProgram {
    static let name = "restock-ceiling"

    /// Runs it once and returns its messages per second, from its first publish to the `count`-th message
    /// counted at its subscriber.
    static func rate(_ count: Int, size: Int, broker: MosquittoBroker, within seconds: Int = 300) async throws -> Double {
        let result = Mutex<String?>(nil)
        let program = try PipedProcess(try executable(), [String(broker.port), String(count), String(size), String(seconds)]) { line, _ in
            result.withLock { $0 = $0 ?? String(decoding: line, as: UTF8.self) }
        }
        defer { program.stop() }
        // Its one line, or its exit (then the line may still be in the pipe, read a moment later).
        try await waitUntil("\(name) \(count) to finish", within: Double(seconds + 30)) {
            result.withLock { $0 != nil } || program.hasExited
        }
        try await waitUntil("\(name)'s result line", within: 10) { result.withLock { $0 != nil } }
        let line = result.withLock { $0 } ?? ""
        let fields = line.split(separator: " ")
        guard fields.count == 3, fields[0] == "ok", Int(fields[1]) == count, let elapsed = UInt64(fields[2]), elapsed > 0 else {
            throw BenchFailure("\(name) \(count) messages of \(size) bytes: \(line)")
        }
        try await program.waitForExit(within: 30)
        return Double(count) / (Double(elapsed) / 1e9)
    }

    /// Starts its relay (Benchmarks/MQTTCeiling/relay.c) on `broker`, syncing a page of `file` for each message of
    /// `relay/in` before it passes the message on to `relay/out`: B4's floor measured as a path. Returns once it is
    /// subscribed.
    static func relay(broker: MosquittoBroker, file: URL) async throws -> Relay {
        let said = Said()
        let program = try PipedProcess(try executable(), ["relay", String(broker.port), file.path]) { line, _ in
            said.lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) }
        }
        try await waitUntil("\(name) relay to subscribe", within: 30) { said.first != nil || program.hasExited }
        guard said.first == "ready" else {
            program.stop()
            throw BenchFailure("\(name) relay: \(said.first ?? "exited without a word")")
        }
        return Relay(program: program, said: said)
    }

    /// What a program printed, line by line.
    final class Said: Sendable {
        let lines = Mutex<[String]>([])
        var first: String? { lines.withLock { $0.first } }
    }

    /// The relay, running.
    struct Relay: Sendable {
        fileprivate let program: PipedProcess
        fileprivate let said: Said

        /// Throws the relay's error, if it has printed one (it relays nothing more then).
        func check() throws {
            if let failure = said.lines.withLock({ $0.first { $0.hasPrefix("error:") } }) { throw BenchFailure("\(name) relay: \(failure)") }
        }

        /// Stops it (its standard input closed) and throws its error, if any.
        func stop() async throws {
            program.closeInput()
            try await program.waitForExit(within: 30)
            try check()
        }
    }

    /// Beside the running `restock-bench`, as `make bench` builds it.
    private static func executable() throws -> String {
        let bench = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        let path = bench.resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchFailure("no \(path): build it with `swift build -c release --product \(name)` (make bench does)")
        }
        return path
    }
}
