import Foundation
import Histogram
import Mosquitto
import RestockCore
import RestockTestSupport
import Deadlines

/// B4: one restock to one customer, 1,000 times at a steady rate: from the stock command written to
/// `mosquitto_pub -l` to the alert printed by the customer's `mosquitto_sub`; next to the same two tools
/// talking straight to each other through the same broker.
struct LatencyBench {
    static let restocks = 1_000
    /// One restock every 5 ms (200 a second), unless the previous alert is later than that.
    static let period: UInt64 = 5_000_000
    let runs: Int

    /// The p50, p99 and max of a path in each run, in µs.
    struct Latencies {
        var p50 = Samples(), p99 = Samples(), max = Samples()

        mutating func append(_ histogram: Histogram<UInt64>) {
            p50.append(Double(histogram.valueAtPercentile(50)) / 1_000)
            p99.append(Double(histogram.valueAtPercentile(99)) / 1_000)
            max.append(Double(histogram.max) / 1_000)
        }
    }

    struct Percentiles {
        /// The path's own.
        private var path = Latencies()
        var p50: Samples { path.p50 }
        var p99: Samples { path.p99 }
        var max: Samples { path.max }
        /// Issue 35's floor measured as a path in each run: B4's messages, at its pace, through `restock-ceiling relay`
        /// (two hops through the broker and one `fdatasync` on the data disk, and nothing else); on SQLite only.
        var relay = Latencies()
        /// The median `fdatasync` on the store's data disk in each run (``DiskSync``), in µs; on SQLite only.
        var fdatasync = Samples()
        /// The same, one every half period: the pace of the store's log syncs in B4 (the restock's and the reset's).
        var pacedFdatasync = Samples()
        /// The median round trip of an UNSUBSCRIBE answered by the broker, from a connected client of the project's
        /// own, in each run, in µs: what the store's delivery fence waits for after the log's sync.
        var brokerRoundTrip = Samples()
        /// The median statement committed by `pgbench` in each run (``DatabaseRoundTrip``), in µs; on PostgreSQL only.
        var databaseRoundTrip = Samples()

        mutating func append(_ histogram: Histogram<UInt64>) { path.append(histogram) }
    }

    /// The store's percentiles and the C tools', the store's state in `postgres`' database when given.
    func run(say: (String) -> Void, postgres: PrivatePostgres? = nil) async throws -> (store: Percentiles, tools: Percentiles) {
        let broker = try await BenchBroker.start()
        let state = try await BenchState.make(on: postgres)
        defer { state.remove() }
        let store = try state.store(on: broker)
        try await store.start()
        try await mosquittoPub(broker, "restock/apple/subscribe/latency", #"{"sku":"latency-1","mode":"every"}"#)
        try await state.waitForWatches(1, within: 30)

        let customer = try await Subscriber(
            broker: broker, filter: "restock/apple/customers/latency/alerts", probeTopic: "restock/apple/customers/latency/alerts",
            identify: ArrivalLog.alertID)
        let echo = try await Subscriber(broker: broker, filter: "bench/latency", probeTopic: "bench/latency") { line in
            String(decoding: line, as: UTF8.self)
        }
        // The admin is the project's own client (as `restock stock` is): mosquitto_pub -l reads its next line
        // only when its network loop wakes, which adds tens of ms to the second line of each restock.
        let admin = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "bench-latency-admin"))
        try await admin.connect()
        let stock = { @Sendable (quantity: Int) in
            _ = try? admin.send(Array(#"{"sku":"latency-1","set":\#(quantity)}"#.utf8), to: "restock/apple/admin/stock", qos: .atLeastOnce)
        }
        let pinger = try tool(broker, topic: "bench/latency")
        // The floor as a path, next to the store on its data disk: on SQLite only (PostgreSQL's floor is a commit).
        var relay: (program: CeilingProgram.Relay, arrivals: Subscriber)?
        if let directory = state.dataDirectory {
            let arrivals = try await Subscriber(broker: broker, filter: "relay/out", probeTopic: "relay/out") { line in
                String(decoding: line, as: UTF8.self)
            }
            relay = (try await CeilingProgram.relay(broker: broker, file: directory.appendingPathComponent("bench-relay-page")), arrivals)
        }
        let relayed = { @Sendable (payload: String) in
            _ = try? admin.send(Array(payload.utf8), to: "relay/in", qos: .atLeastOnce)
        }
        var result = (store: Percentiles(), tools: Percentiles())
        for run in 1...runs {
            let storeRun = try await measure(
                customer.log, send: { _ in stock(1) }, reset: { stock(0) })
            let toolsRun = try await measure(echo.log, send: { index in pinger.write(line: "ping-\(run)-\(index)") })
            result.store.append(storeRun)
            result.tools.append(toolsRun)
            if let relay {
                let relayRun = try await measure(relay.arrivals.log, send: { index in relayed("relayed-\(run)-\(index)") }, reset: { relayed("reset") })
                try relay.program.check()
                result.store.relay.append(relayRun)
            }
            if let directory = state.dataDirectory {
                result.store.fdatasync.append(try await DiskSync.medianMicroseconds(in: directory))
                result.store.pacedFdatasync.append(
                    try await DiskSync.medianMicroseconds(in: directory, pace: .nanoseconds(Int64(Self.period / 2))))
            }
            result.store.brokerRoundTrip.append(try await Self.unsubscribeRoundTrip(of: admin))
            if let postgres { result.store.databaseRoundTrip.append(try await DatabaseRoundTrip.medianMicroseconds(on: postgres)) }
            let floorPath = relay == nil ? "" : " · the floor as a path p50 \(Figure.format(result.store.relay.p50.values.last!)) µs p99 \(Figure.format(result.store.relay.p99.values.last!)) µs"
            say("  B4\(postgres == nil ? "" : " on PostgreSQL") run \(run): store p50 \(Figure.format(result.store.p50.values.last!)) µs p99 \(Figure.format(result.store.p99.values.last!)) µs · tools p50 \(Figure.format(result.tools.p50.values.last!)) µs p99 \(Figure.format(result.tools.p99.values.last!)) µs\(floorPath)")
        }
        await admin.disconnect()
        pinger.stop()
        try await relay?.program.stop()
        try await store.send(SIGTERM)
        try await broker.stop()
        return result
    }

    /// The store's percentiles on a private PostgreSQL server of their own, and then the takeover's time there
    /// (``TakeoverBench``), in seconds.
    func runOnPostgres(say: (String) -> Void) async throws -> (store: Percentiles, tools: Percentiles, takeover: Samples) {
        try await PrivatePostgres.with { server in
            let latency = try await run(say: say, postgres: server)
            return (latency.store, latency.tools, try await TakeoverBench(runs: runs).run(say: say, postgres: server))
        }
    }

    /// The median of 200 UNSUBSCRIBEs of a filter nothing subscribes, each answered, in µs: the round trip the store's
    /// delivery fence makes (its probe) between the log's sync and the alert.
    private static func unsubscribeRoundTrip(of client: MQTTClient) async throws -> Double {
        var samples = Samples()
        for _ in 0..<200 {
            let start = nanoseconds()
            try await client.unsubscribe(from: "bench/probe")
            samples.append(Double(nanoseconds() - start) / 1_000)
        }
        return samples.median
    }

    private func tool(_ broker: MosquittoBroker, topic: String) throws -> PipedProcess {
        try PipedProcess("mosquitto_pub", ["-h", "127.0.0.1", "-p", String(broker.port), "-V", "5", "-q", "1", "-t", topic, "-l"])
    }

    /// `restocks` round trips, one every `period`: send, wait for the arrival, reset. The whole run has a deadline.
    private func measure(
        _ log: ArrivalLog, send: @escaping @Sendable (Int) -> Void, reset: @escaping @Sendable () -> Void = {}
    ) async throws -> Histogram<UInt64> {
        let latencies = try await withDeadline(120, waitingFor: "\(Self.restocks) round trips") {
            var arrivals = log.arrivals.makeAsyncIterator()
            var latencies: [UInt64] = []
            let clock = ContinuousClock()
            var tick = clock.now
            for index in 0..<Self.restocks {
                try await clock.sleep(until: tick)  // pacing: the steady rate, not a wait for anything
                let start = nanoseconds()
                send(index)
                guard let arrived = await arrivals.next() else { throw BenchFailure("B4: the subscriber stopped") }
                latencies.append(arrived - start)
                reset()
                tick = tick.advanced(by: .nanoseconds(Int64(Self.period)))
            }
            return latencies
        }
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        for latency in latencies { histogram.record(latency) }
        return histogram
    }
}
