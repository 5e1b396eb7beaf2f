import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Synchronization

/// S5: one customer subscribes to SKU after SKU at 200 requests a second for 15 s (3,000 requests), while other
/// customers subscribe one at a time: each of their confirmations (request to mirror) must come within a second. The
/// greedy one is held to the watch limit and the request rate, its refusals answered at most once a second, and the
/// store's memory stays small (counts: other customers' confirmations within 1 s).
enum GreedyCustomer {
    static let rate = 200
    static let seconds = 15

    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let pid = try store.launchedProcess().pid
        let errors = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/mallory/errors")
        let client = try broker.storeClient()

        let flooder = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "s5-mallory", maxInflight: 1_000))
        try await flooder.connect()
        let clock = ContinuousClock()
        let began = clock.now
        let flood = Task {
            // 10 requests every 50 ms: 200 a second.
            var sent = 0
            while sent < rate * seconds {
                let tick = began + .milliseconds(50 * (sent / 10 + 1))
                for _ in 0..<10 {
                    _ = try flooder.send(Array("s5-\(sent)".utf8), to: "restock/apple/subscribe/mallory", qos: .atLeastOnce)
                    sent += 1
                }
                try await clock.sleep(until: tick)
            }
            return sent
        }
        // Other customers, one after another, each timed from its request to its confirmation.
        var confirmations: [Duration] = []
        var probe = 0
        while clock.now - began < .seconds(seconds) {
            probe += 1
            let customer = try CustomerID("s5-probe-\(probe)")
            try await client.prepareListening(customer)
            let started = clock.now
            _ = try await client.subscribe(customer, to: try SKU("s5-wanted"), wait: 30)
            confirmations.append(clock.now - started)
            try await clock.sleep(for: .milliseconds(300))
        }
        let sent = try await flood.value
        await flooder.disconnect()
        try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 60)
        let elapsed = clock.now - began
        let peak = Self.peakMemory(of: pid)
        let mirror = try await client.watching(try CustomerID("mallory"))
        let refusals = errors.payloads(ErrorReport.self, on: "restock/apple/customers/mallory/errors")

        let fast = confirmations.filter { $0 <= .seconds(1) }.count
        var row = ScenarioRow(
            "S5", "one customer subscribes to a new SKU at \(rate) requests/s for \(seconds) s (\(sent) requests); \(confirmations.count) other customers subscribe meanwhile (counts: their confirmations within 1 s)",
            expected: confirmations.count, distinct: fast, deliveries: fast)
        let sorted = confirmations.sorted()
        row.notes.append(
            "other customers' confirmations: median \(milliseconds(sorted[sorted.count / 2])), slowest \(milliseconds(sorted.last ?? .zero))")
        row.notes.append(
            "the greedy customer: \(mirror?.watching.count ?? 0) watches, \(refusals.count) refusals answered in \(Restore.seconds(elapsed)) (\(Set(refusals.map(\.error)).sorted().joined(separator: ", "))); store peak memory \(peak.map { "\($0 / 1024) MiB" } ?? "unknown")")
        row.check(fast == confirmations.count, "\(confirmations.count - fast) confirmations took longer than 1 s")
        row.check((mirror?.watching.count ?? 0) <= Store.defaultMaximumWatchesPerCustomer, "the greedy customer got past the watch limit")
        row.check(Double(refusals.count) <= elapsed.seconds + 1, "\(refusals.count) refusals answered in \(elapsed): more than one a second")
        row.check(refusals.allSatisfy { ["rate-limited", "too-many-watches"].contains($0.error) }, "other refusals: \(Set(refusals.map(\.error)))")
        row.check((peak ?? 0) < 512 * 1024, "the store's memory peaked at \(peak.map { "\($0 / 1024) MiB" } ?? "?")")
        row.check(store.exitStatus == nil, "the store stopped")
        try await store.send(SIGTERM)
        return row
    }

    static func milliseconds(_ duration: Duration) -> String { "\(Int(duration.seconds * 1000)) ms" }

    /// The process's peak resident memory (VmHWM), in KiB.
    static func peakMemory(of pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
    }
}
