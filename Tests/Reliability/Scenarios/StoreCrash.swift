import RestockPipeline
import Foundation
import LocalBroker
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R3: the store dies (SIGKILL, injected) right after the transaction that raised 500 alerts commits and
/// before any is published; restarted, it publishes them all from its outbox with their ids.
enum StoreCrash {
    static let customers = 500

    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start(extraEnvironment: ["RESTOCK_FAULT": "crash-after-commit"])
        let ids = Requests.customers(customers, prefix: "crash")
        try await Requests.publish(Requests.subscriptions(ids, to: "crash-sku"), to: broker.url)
        try await StoreQueues.waitForWatches(customers, in: store.dataDirectory, within: 60)
        let collector = try await AlertCollector(broker: broker)

        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"crash-sku","set":5}"#)
        try await waitUntil("the injected crash", within: 30) { store.exitStatus != nil }
        let crashStatus = store.exitStatus ?? 0
        let atCrash = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory)
        let publishedBeforeCrash = collector.total
        let crashLog = store.log

        try await store.start()
        try? await waitUntil("every alert", within: 60) { collector.distinct >= customers }

        var row = ScenarioRow(
            "R3", "store SIGKILLed after committing 500 alerts, before publishing any; restarted",
            expected: customers, distinct: collector.distinct, deliveries: collector.total)
        row.notes.append("at the crash: \(atCrash.outbox) messages in the outbox (alerts, mirrors, inventory), \(publishedBeforeCrash) alerts published; exit status \(crashStatus)")
        row.check(crashLog.contains("fault injected: crash-after-commit"), "the fault did not fire")
        row.check(publishedBeforeCrash == 0, "alerts went out before the crash: the fault was not between commit and publish")
        row.check(atCrash.outbox >= customers, "the outbox did not hold the alerts at the crash")
        row.check(Set(collector.idsByCustomer.keys) == Set(ids), "not every customer was alerted")
        let left = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory)
        row.check(left.watches == 0, "\(left.watches) `once` watches left after their alerts")
        await collector.close()
        try await store.send(SIGTERM)
        return row
    }
}
