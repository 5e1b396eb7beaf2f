import Foundation
import LocalBroker
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R1, R2: the broker (persistence on) stopped and restarted while restocks stream to 200 `every` customers.
enum BrokerRestart {
    enum Fault {
        case r1, r2
        var id: String { self == .r1 ? "R1" : "R2" }
        var signal: String { self == .r1 ? "SIGTERM" : "SIGKILL" }
    }

    static let customers = 200
    static let rises = 40

    static func run(_ fault: Fault) async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let store = try await StoreProcess.started(on: broker)
        let ids = Requests.customers(customers, prefix: "stream")
        try await Requests.publish(Requests.subscriptions(ids, to: "stream", mode: "every"), to: broker.url)
        try await StoreQueues.waitForWatches(customers, in: store.dataDirectory, within: 60)
        let collector = try await AlertCollector(broker: broker)
        let expected = customers * rises

        // The fault lands a quarter of the way through the stream, while alerts are in flight.
        let stream = try StockStream(url: broker.url, sku: "stream")
        let faulted = Task {
            try await waitUntil("a quarter of the stream", within: 120) { collector.distinct >= expected / 4 }
            let atFault = collector.distinct
            if fault == .r1 { try await broker.stop() } else { try await broker.kill() }
            try await broker.launch()
            return atFault
        }
        try await stream.run(rises: rises)
        let atFault = try await faulted.value
        try? await waitUntil("every alert", within: 60) { collector.distinct >= expected }

        var row = ScenarioRow(
            fault.id, "broker \(fault.signal) + restart (persistence on) during \(rises) restocks to \(customers) `every` customers",
            expected: expected, distinct: collector.distinct, deliveries: collector.total)
        row.notes.append("\(atFault) alerts in when the broker went down")
        let perCustomer = collector.idsByCustomer
        row.check(perCustomer.count == customers && perCustomer.values.allSatisfy { $0.count == rises }, "some customer missed a rise")
        row.check(store.exitStatus == nil, "the store stopped")
        row.check(store.log.contains("reconnected"), "the store did not say it reconnected")
        await collector.close()
        try await store.send(SIGTERM)
        return row
    }
}
