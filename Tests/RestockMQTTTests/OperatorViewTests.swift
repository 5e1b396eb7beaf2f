import Deadlines
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Synchronization
import Testing

/// Issue 32, item 4: what the operator sees under load — gauges that move while the store applies a big backlog, and
/// refused admin questions counted with every other refusal.
@Suite("What the operator sees", .serialized, .timeLimit(.minutes(5)))
struct OperatorViewTests {
    /// `name`'s value in a Prometheus text exposition, if it is there.
    static func value(of name: String, in metrics: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    /// `values` with each run of repeats given once.
    static func distinct(_ values: [Double]) -> [Double] {
        values.reduce(into: []) { kept, value in if kept.last != value { kept.append(value) } }
    }

    @Test("the watch and lag gauges move while the store applies a backlog of 40,000 subscribes, about once a second (they froze for seconds)")
    func gaugesMoveUnderLoad() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--http", "127.0.0.1:0", "--customer-rate", "off"])
        try await store.start()
        try await store.send(SIGTERM)
        // The backlog waits in the store's session while it is stopped, and comes at once when it starts again.
        let count = 40_000
        try await Requests.publish(Requests.subscriptions(Requests.customers(count, prefix: "load"), to: "ipad"), to: broker.url)
        let restarted = try StoreProcess(broker: broker, dataDirectory: store.dataDirectory, extraArguments: ["--http", "127.0.0.1:0"])
        try restarted.launch()
        let url = try await restarted.httpURL()
        // Every answer of /metrics, with when it came: how many values a gauge can show depends on how long the backlog
        // takes, which depends on the machine's load, so the test asks for as many as that time allows.
        let polls = Mutex<[(at: ContinuousClock.Instant, watches: Double, lag: Double)]>([])
        let unanswered = Mutex(0)
        try await waitUntil("every watch applied, as /metrics says", within: 240, pollEvery: .milliseconds(100)) {
            guard let metrics = try? await httpGet(url + "/metrics", timeout: 2).body,
                let watched = Self.value(of: "restock_watches", in: metrics), let lag = Self.value(of: "restock_journal_lag_requests", in: metrics)
            else {
                unanswered.withLock { $0 += 1 }
                return false
            }
            polls.withLock { $0.append((.now, watched, lag)) }
            return watched == Double(count) && lag == 0
        }
        let answers = polls.withLock { $0 }
        let busy = answers.filter { $0.lag > 0 || ($0.watches > 0 && $0.watches < Double(count)) }
        let watches = Self.distinct(answers.map(\.watches)), lags = Self.distinct(answers.map(\.lag))
        let between = watches.filter { $0 > 0 && $0 < Double(count) }
        // The gauges are sampled each second: a backlog seen for `seconds` shows about that many values of each, less the
        // time it waits for the store to start applying it. Frozen until the pipeline returned from the whole backlog
        // (issue 32), they showed one at most, however long it took; so two values are asked for once the backlog
        // took eight seconds, and one before. Not more: in CI beside the whole run, a sampler starved of the machine
        // moved once in five seconds (3 values in 15.8 s), and once stood still for 6.5 s (2 values in 12.8 s); how
        // often it runs there is the machine's, not the store's.
        let seconds = busy.first.map { first in (answers.last!.at - first.at) / .seconds(1) } ?? 0
        let expected = min(2, max(1, Int(seconds / 4)))
        let start = answers.first?.at ?? .now
        let changes = zip(answers.dropFirst(), answers).filter { $0.watches != $1.watches || $0.lag != $1.lag }
            .map(\.0).map { "\(Int(($0.at - start) / .milliseconds(1))) ms: \(Int($0.watches))/\(Int($0.lag))" }
        let polled = "\(answers.count) answers of /metrics, \(unanswered.withLock { $0 }) polls unanswered"
        print("gauges under load: \(polled); changes (watches/lag): \(changes)")
        #expect(between.count >= expected, "the watch gauge took \(watches) on its way to \(count), in \(seconds) s (\(polled)); changes (watches/lag): \(changes)")
        #expect(lags.filter { $0 > 0 && $0 < Double(count) }.count >= expected, "the lag gauge took \(lags), in \(seconds) s; changes: \(changes)")
        try await restarted.send(SIGTERM)
    }

    @Test("refused report and dead-letter list requests count in restock_requests_refused_total (20 refused, 0 counted)")
    func adminRefusalsCounted() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--http", "127.0.0.1:0"])
        try await store.start()
        let url = try await store.httpURL()
        let admin = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "counted-admin"))
        try await admin.connect()
        try await admin.publish(Array("[1]".utf8), to: appleTopics.adminReport)  // invalid-json
        try await admin.publish(Array(#"{"sku":"ipad"}"#.utf8), to: appleTopics.adminDeadLetters)  // invalid-field
        try await admin.publish(
            Array("{}".utf8), to: appleTopics.adminReport, properties: MQTTMessageProperties(responseTopic: "restock/apple/admin/replies/a/b"))
        try await admin.publish(Array("{}".utf8), to: appleTopics.adminReport, retain: true)  // retained-request
        // 90 s: in CI beside the whole run this store took 46 s to come online, and its refusals were not all counted
        // within the 30 s this allowed before (a wait on a condition: a longer bound costs a passing run nothing).
        do {
            try await waitUntil("the refusals counted", within: 90) {
                let metrics = try await httpGet(url + "/metrics").body
                return metrics.contains(#"restock_requests_refused_total{code="invalid-json"} 1"#)
                    && metrics.contains(#"restock_requests_refused_total{code="invalid-field"} 2"#)
                    && metrics.contains(#"restock_requests_refused_total{code="retained-request"} 1"#)
            }
        } catch {
            let counted = (try? await httpGet(url + "/metrics").body)?.split(separator: "\n").filter { $0.hasPrefix("restock_requests_refused_total") }
            Issue.record("counted: \(counted ?? []); the store's log ends: \(store.log.suffix(1_500))")
            throw error
        }
        try await admin.publish([], to: appleTopics.adminReport, retain: true)
        await admin.disconnect()
        try await store.send(SIGTERM)
    }
}
