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
}
