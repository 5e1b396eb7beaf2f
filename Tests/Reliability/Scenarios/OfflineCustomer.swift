import Foundation
import LocalBroker
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R4: a customer away (persistent session, disconnected) while 5,000 alerts are raised for it, then back.
enum OfflineCustomer {
    static let alerts = 5_000

    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let away = try await CustomerSession("away", url: broker.url)
        await away.close()
        try await Requests.publish(Requests.subscriptions(["away"], to: "often", mode: "every"), to: broker.url)
        try await StoreQueues.waitForWatches(1, in: store.dataDirectory, within: 30)

        // 5,000 rises from mosquitto_pub -l: 10,000 admin requests.
        let lines = String(repeating: #"{"sku":"often","set":0}"# + "\n" + #"{"sku":"often","set":1}"# + "\n", count: alerts)
        let pub = try await ChildProcess.run(
            "mosquitto_pub", ["-p", String(broker.port), "-h", "127.0.0.1", "-q", "1", "-t", "restock/apple/admin/stock", "-l"],
            input: Data(lines.utf8), within: 120)
        guard pub.status == 0 else { throw StoreExited(status: pub.status, log: pub.standardError) }
        try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 120)
        let clock = ContinuousClock()
        let back = clock.now
        let customer = try await CustomerSession("away", url: broker.url)
        try? await waitUntil("5,000 alerts", within: 60) { customer.distinct >= alerts }
        let drained = clock.now - back

        var row = ScenarioRow(
            "R4", "customer offline (persistent session) while 5,000 alerts are raised for it, then back",
            expected: alerts, distinct: customer.distinct, deliveries: customer.deliveries)
        row.notes.append("all queued alerts received \(drained.formatted(.units(allowed: [.milliseconds]))) after reconnecting")
        await customer.close()
        try await store.send(SIGTERM)
        return row
    }
}
