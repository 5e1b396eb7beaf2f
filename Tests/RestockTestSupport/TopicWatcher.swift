import Foundation
import LocalBroker
import Deadlines

/// `mosquitto_sub` as a real process, printing `topic payload` lines.
public final class TopicWatcher: Sendable {
    private let child: ChildProcess
    private let prefix: String
    private let outputFile: URL

    /// Starts `mosquitto_sub` on `filter` and waits for its SUBACK.
    public init(broker: MosquittoBroker, filter: String, extra: [String] = []) async throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("sub-\(UUID().uuidString).log")
        outputFile = output
        // Line-buffered: redirected to a file, mosquitto_sub would hold its debug lines (the SUBACK) back.
        child = try ChildProcess(
            "stdbuf", ["-oL", "mosquitto_sub", "-p", String(broker.port), "-h", "127.0.0.1", "-V", "5", "-q", "1", "-v", "-d", "-t", filter] + extra,
            outputFile: output)
        prefix = String(filter.prefix { $0 != "+" && $0 != "#" })
        try await waitUntil("mosquitto_sub to subscribe to \(filter)", within: 15) { [child] in child.output.contains("SUBACK") }
    }

    deinit {
        child.send(SIGKILL)
        try? FileManager.default.removeItem(at: outputFile)
    }

    /// Every `(topic, payload)` received so far.
    public var messages: [(topic: String, payload: String)] {
        child.output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix(prefix), let space = line.firstIndex(of: " ") else { return nil }
            return (String(line[..<space]), String(line[line.index(after: space)...]))
        }
    }

    /// The payloads received on `topic`, decoded.
    public func payloads<T: Decodable>(_ type: T.Type, on topic: String) -> [T] {
        messages.filter { $0.topic == topic }.compactMap { try? JSONDecoder().decode(T.self, from: Data($0.payload.utf8)) }
    }

    /// Waits until `condition` holds for the messages received.
    public func wait(for what: String, within seconds: Double = 20, _ condition: @escaping @Sendable (TopicWatcher) -> Bool) async throws {
        try await waitUntil(what, within: seconds) { condition(self) }
    }

    /// Waits until `condition` holds (`true`), or `stop` does first (`false`, `condition` not holding then); fails
    /// after `seconds`.
    public func waitUnless(
        _ stop: @escaping @Sendable () -> Bool, for what: String, within seconds: Double = 20,
        _ condition: @escaping @Sendable (TopicWatcher) -> Bool
    ) async throws -> Bool {
        try await waitUntil("\(what), or the stop", within: seconds) { condition(self) || stop() }
        return condition(self)
    }
}
