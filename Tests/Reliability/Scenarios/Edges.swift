import RestockPipeline
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R9–R11: the edges of issue #12 — a broker that loses everything, a clean stop in the middle of a fan-out,
/// and an alert raised before the customer's first listen.
enum Edges {
    /// R9: the broker (no persistence) stopped and started again on the same port: it has lost the store's
    /// session and every retained message. The store publishes them all again.
    static func brokerWithoutPersistence() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let customers = Requests.customers(200, prefix: "r9-")
        try await Requests.publish(Requests.subscriptions(customers, to: "r9-sku", mode: "every"), to: broker.url)
        try await StoreQueues.waitForWatches(customers.count, in: store.dataDirectory, within: 60)
        for index in 0..<20 { try await client.changeStock(of: SKU("r9-stock-\(index)"), .set(index), wait: 30) }
        let expected = 1 + 20 + customers.count  // status, inventory, mirrors

        try await broker.stop()
        try await broker.launch()
        let clock = ContinuousClock(), restarted = clock.now
        let tap = try await MessageTap(url: broker.url, filters: ["restock/apple/status", "restock/apple/inventory/+", "restock/apple/customers/+/subscriptions"])
        try? await waitUntil("every retained topic back", within: 30) {
            Set(tap.messages.map(\.topic)).count >= expected
        }
        let took = clock.now - restarted
        await tap.close()
        // Read again as a newcomer would: retained.
        let late = try await MessageTap(url: broker.url, filters: ["restock/apple/status", "restock/apple/inventory/+", "restock/apple/customers/+/subscriptions"])
        try? await waitUntil("the retained topics read back", within: 10) { Set(late.messages.map(\.topic)).count >= expected }
        let retained = Set(late.messages.map(\.topic)).count
        await late.close()

        var row = ScenarioRow(
            "R9", "broker without persistence stopped and started again: status, 20 inventory records, 200 mirrors lost",
            expected: expected, distinct: retained, deliveries: retained)
        let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        row.notes.append("every retained topic back \(String(format: "%.2f", seconds)) s after the broker was started again")
        row.check(seconds <= 2, "the retained topics took \(String(format: "%.2f", seconds)) s to come back (goal: 2 s)")
        try await store.send(SIGTERM)
        return row
    }

    /// R10: SIGTERM in the middle of a fan-out to 20,000 customers, then a restart: the stop drains the outbox,
    /// records every acknowledgement, and the restart sends nothing twice.
    static func sigtermMidFanOut() async throws -> ScenarioRow {
        let count = 20_000
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--drain-timeout", "60"])
        try await store.start()
        let customers = Requests.customers(count, prefix: "r10-")
        try await Requests.publish(Requests.subscriptions(customers, to: "r10-sku"), to: broker.url)
        try await StoreQueues.waitForWatches(count, in: store.dataDirectory, within: 120)
        let collector = try await AlertCollector(broker: broker)
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"r10-sku","set":5}"#)
        try await waitUntil("the fan-out to begin", within: 60) { collector.total > 0 }
        let atSigterm = collector.total
        try await store.send(SIGTERM)
        let left = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).outbox
        let stopLog = store.log
        try await store.start()
        let client = try broker.storeClient()
        // Answered after anything the restart resent.
        try await client.changeStock(of: SKU("r10-marker"), .set(1), wait: 60)
        try? await waitUntil("every alert", within: 60) { collector.distinct >= count }

        var row = ScenarioRow(
            "R10", "SIGTERM mid fan-out to 20,000 customers (drain up to 60 s), then a restart",
            expected: count, distinct: collector.distinct, deliveries: collector.total)
        row.notes.append("\(atSigterm) alerts out at SIGTERM; \(left) messages left in the outbox after the stop")
        row.check(stopLog.contains("the outbox is empty"), "the stop did not drain the outbox")
        await collector.close()
        try await store.send(SIGTERM)
        return row
    }

    /// R11: alerts raised before the customer's first listen — at subscribe time and at a later restock — reach
    /// the customer on that first listen (`restock subscribe` made the listening session).
    static func firstAlertBeforeFirstListen() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let customers = (0..<50).map { "r11-\($0)" }
        func restock(_ arguments: [String]) async throws -> CommandResult {
            try await ChildProcess.run(restockExecutable, arguments + ["--broker", broker.url], within: 60)
        }
        _ = try await restock(["stock", "--sku", "r11-now", "--set", "3"])
        for customer in customers {
            _ = try await restock(["subscribe", "--customer", customer, "--sku", "r11-now"])
            _ = try await restock(["subscribe", "--customer", customer, "--sku", "r11-later"])
        }
        _ = try await restock(["stock", "--sku", "r11-later", "--set", "3"])
        var delivered = 0, deliveries = 0
        for customer in customers {
            let result = try await restock(["listen", "--customer", customer, "--count", "2", "--timeout", "10", "--json"])
            let ids = result.standardOutput.split(separator: "\n").compactMap { try? RestockAlert(jsonData: Data($0.utf8)).id }
            deliveries += ids.count
            delivered += Set(ids).count
        }
        let row = ScenarioRow(
            "R11", "50 customers: subscribe (one SKU in stock, one restocked later), then a first listen each",
            expected: customers.count * 2, distinct: delivered, deliveries: deliveries)
        try await store.send(SIGTERM)
        return row
    }
}
