import Foundation
import LocalBroker
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R5: the store and the alert collector reach the broker through a TCP proxy that cuts every link three
/// times while restocks stream to 200 `every` customers.
enum ConnectionCut {
    static let customers = 200
    static let rises = 40

    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let proxy = try TCPProxy(to: broker.port)
        defer { proxy.close() }
        let store = try StoreProcess(broker: broker, brokerURL: proxy.url)
        try await store.start()
        let ids = Requests.customers(customers, prefix: "cut")
        try await Requests.publish(Requests.subscriptions(ids, to: "cut-sku", mode: "every"), to: broker.url)
        try await StoreQueues.waitForWatches(customers, in: store.dataDirectory, within: 60)
        let collector = try await AlertCollector(broker: broker, url: proxy.url)
        let expected = customers * rises

        let cutter = Task {
            var cuts: [String] = []
            for mark in [expected / 4, expected / 2, expected * 3 / 4] {
                try await waitUntil("alerts to reach \(mark)", within: 120) { collector.distinct >= mark }
                cuts.append("\(proxy.cut()) links cut at \(collector.distinct) alerts")
            }
            return cuts
        }
        try await StockStream(url: broker.url, sku: "cut-sku").run(rises: rises)
        let cuts = try await cutter.value
        try? await waitUntil("every alert", within: 60) { collector.distinct >= expected }

        var row = ScenarioRow(
            "R5", "every link between the store, the alert reader and the broker cut 3 times by a TCP proxy during \(rises) restocks to \(customers) customers",
            expected: expected, distinct: collector.distinct, deliveries: collector.total)
        row.notes += cuts
        row.notes.append("\(proxy.connectionsAccepted) connections through the proxy in all")
        row.check(collector.idsByCustomer.values.allSatisfy { $0.count == rises }, "some customer missed a rise")
        row.check(store.exitStatus == nil, "the store stopped")
        await collector.close()
        try await store.send(SIGTERM)
        return row
    }
}
