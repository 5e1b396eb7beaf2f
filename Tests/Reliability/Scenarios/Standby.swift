import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R12: a standby on the live store's data directory takes over when the live process is SIGKILLed in the middle
/// of a stream of requests and a fan-out: every request applied, every alert delivered, duplicates only with
/// the same id.
enum Standby {
    static let customers = 5_000

    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let standby = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
        try standby.launch()
        try await waitUntil("the standby to wait", within: 30) { standby.log.contains("standby for store") }

        let first = Requests.customers(customers, prefix: "r12a-"), second = Requests.customers(customers, prefix: "r12b-")
        try await Requests.publish(Requests.subscriptions(first, to: "r12-sku"), to: broker.url)
        try await StoreQueues.waitForWatches(customers, in: live.dataDirectory, within: 120)
        let collector = try await AlertCollector(broker: broker)
        // A stream of requests and a restock, and the kill in the middle of both.
        let sending = Task { try await Requests.publish(Requests.subscriptions(second, to: "r12-later"), to: broker.url) }
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"r12-sku","set":5}"#)
        try await waitUntil("the fan-out to begin", within: 60) { collector.total > 0 }
        try await live.send(SIGKILL)
        let clock = ContinuousClock(), killed = clock.now
        let client = try broker.storeClient()
        let liveLog = live.log
        try await waitUntil("the standby online", within: 30) {
            guard standby.log.contains("takes over") else { return false }
            return (try? await client.status())?.isOnline == true
        }
        let takeover = clock.now - killed
        try await sending.value
        try await StoreQueues.waitForWatches(customers, in: standby.dataDirectory, within: 120)
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"r12-later","set":5}"#)
        try? await waitUntil("every alert", within: 120) { collector.distinct >= 2 * customers }

        var row = ScenarioRow(
            "R12", "standby on the data directory; the live store SIGKILLed mid fan-out and mid stream of 5,000 subscribes; then a restock",
            expected: 2 * customers, distinct: collector.distinct, deliveries: collector.total)
        let seconds = Double(takeover.components.seconds) + Double(takeover.components.attoseconds) / 1e18
        row.notes.append("standby online \(String(format: "%.2f", seconds)) s after the SIGKILL")
        row.check(seconds <= 2, "the standby took \(String(format: "%.2f", seconds)) s to take over (goal: 2 s)")
        row.check(!liveLog.contains("already running"), "the live store refused to start")
        let ids = collector.idsByCustomer
        row.check(ids.values.allSatisfy { $0.count == 1 }, "a duplicate carried a different id")
        await collector.close()
        try await standby.send(SIGTERM)
        return row
    }
}
