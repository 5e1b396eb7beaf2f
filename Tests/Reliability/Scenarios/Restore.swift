import RestockPipeline
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R8: a store with 100,000 watches (1,000 customers × 100 SKUs) stopped and started again: every watch back
/// with its position, and the restored store alerts in those positions.
enum Restore {
    static let customers = 1_000
    static let skus = 100
    static let restockedSKUs = ["r8-000", "r8-001", "r8-002"]

    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        // 100 subscribes per customer at once: past the default request burst, which is not what this row is about.
        let store = try StoreProcess(broker: broker, extraArguments: ["--customer-rate", "off"])
        try await store.start()
        let ids = Requests.customers(customers, prefix: "r8c")
        let requests = ids.flatMap { customer in
            (0..<skus).map { index in
                (topic: "restock/apple/subscribe/\(customer)", payload: Array(#"{"sku":"r8-\#(String(format: "%03d", index))"}"#.utf8))
            }
        }
        let clock = ContinuousClock()
        let loading = clock.now
        try await Requests.publish(requests, to: broker.url)
        try await StoreQueues.waitForWatches(customers * skus, in: store.dataDirectory, within: 600)
        let loaded = clock.now - loading

        try await store.send(SIGTERM)
        let before = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
        let restarting = clock.now
        try await store.start()
        let restart = clock.now - restarting
        let after = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)

        // The restored in-process store alerts each SKU's watchers in the positions they had.
        let positions = Dictionary(uniqueKeysWithValues: before.watches.map { ("\($0.customer)/\($0.sku)", $0.position) })
        let collector = try await AlertCollector(broker: broker)
        let stream = try StockStream(url: broker.url, sku: restockedSKUs[0])
        for sku in restockedSKUs { try await stream.client.changeStock(of: try SKU(sku), .set(1), wait: 60) }
        let expected = customers * restockedSKUs.count
        try? await waitUntil("every alert", within: 120) { collector.distinct >= expected }

        var row = ScenarioRow(
            "R8", "store with 100,000 watches (1,000 customers × 100 SKUs) stopped with SIGTERM and started; 3 SKUs restocked",
            expected: expected, distinct: collector.distinct, deliveries: collector.total)
        row.notes.append("100,000 subscribe requests applied in \(seconds(loaded)); restart to online in \(seconds(restart))")
        row.check(after.watches.count == customers * skus, "\(after.watches.count) watches after the restart")
        row.check(before.watches == after.watches, "watches or positions changed across the restart")
        let arrivals = collector.arrivals
        let wrongPositions = arrivals.filter { positions["\($0.customer)/\($0.sku)"] != $0.position }.count
        row.check(wrongPositions == 0, "\(wrongPositions) alerts carry a position the watch did not have")
        for sku in restockedSKUs {
            let order = arrivals.filter { $0.sku.rawValue == sku }.map(\.position)
            row.check(order == order.sorted(), "\(sku): alerts not in position order")
        }
        await collector.close()
        try await store.send(SIGTERM)
        return row
    }

    static func seconds(_ duration: Duration) -> String {
        duration.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))
    }
}
