import Deadlines
import Foundation
import RestockTestSupport

/// B5: subscribe requests processed durably, per second: `requestsPerRun` requests from one MQTT client
/// (QoS 1, many in flight), from the first sent to the last watch committed in the store's database; and in
/// each run, the C ceiling (``CeilingProgram``) carrying as many messages of a request's size through the same broker.
struct SubscribeThroughputBench {
    let runs: Int
    var requestsPerRun = 20_000

    func run(say: (String) -> Void) async throws -> (rate: Samples, ceiling: Samples) {
        let broker = try await BenchBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        var rate = Samples(), ceiling = Samples()
        for run in 1...runs {
            let customers = Requests.customers(requestsPerRun, prefix: "r\(run)-")
            let requests = Requests.subscriptions(customers, to: "b5-\(run)", mode: "every")
            let start = nanoseconds()
            try await Requests.publish(requests, to: broker.url)
            try await StoreQueues.waitForWatches(requestsPerRun * run, in: store.dataDirectory, within: 300, pollEvery: .milliseconds(20))
            rate.append(Double(requestsPerRun) / seconds(since: start))
            try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 120)
            ceiling.append(try await CeilingProgram.rate(requestsPerRun, size: requests[0].payload.count, broker: broker))
            say("  B5 run \(run): \(Figure.format(rate.values.last!)) subscribe requests/s · C ceiling \(Figure.format(ceiling.values.last!)) messages/s")
        }
        try await store.send(SIGTERM)
        try await broker.stop()
        return (rate, ceiling)
    }

    /// The same requests to a store on PostgreSQL (`--database`, a private server of the run's own, fsync on): requests
    /// per second, from the first sent to the last watch committed in the database. Run after SQLite's, on the same
    /// machine, so that the two are compared as a ratio (issue 34: ≥ 0.3).
    func runOnPostgres(say: (String) -> Void) async throws -> Samples {
        try await PrivatePostgres.with { server in
            let broker = try await BenchBroker.start()
            let database = "postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)"
            let store = try StoreProcess(broker: broker, database: database)
            try await store.start()
            var rate = Samples()
            for run in 1...runs {
                let customers = Requests.customers(requestsPerRun, prefix: "r\(run)-")
                let requests = Requests.subscriptions(customers, to: "b5-\(run)", mode: "every")
                let start = nanoseconds()
                try await Requests.publish(requests, to: broker.url)
                try await waitUntil("\(requestsPerRun * run) watches in the database", within: 300, pollEvery: .milliseconds(50)) {
                    (try? await server.psql("SELECT count(*) FROM restock_watch WHERE store = 'apple'")) == "\(requestsPerRun * run)"
                }
                rate.append(Double(requestsPerRun) / seconds(since: start))
                try await waitUntil("the outbox drained", within: 120, pollEvery: .milliseconds(200)) {
                    (try? await server.psql("SELECT count(*) FROM restock_outbox WHERE store = 'apple'")) == "0"
                }
                say("  B5 on PostgreSQL, run \(run): \(Figure.format(rate.values.last!)) subscribe requests/s")
            }
            try await store.send(SIGTERM)
            try await broker.stop()
            return rate
        }
    }
}
