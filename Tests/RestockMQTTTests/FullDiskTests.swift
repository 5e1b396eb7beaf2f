import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing
import Deadlines

/// A full disk pauses the store, never stops it (docs/operations.md, "A full disk"): with `RESTOCK_FAULT=disk-full-while:FILE`
/// every write to its request log and state fails as SQLite fails on a full disk while FILE exists (`make reliability`
/// fills a real file system instead).
@Suite("A full disk is a pause")
struct FullDiskTests {
    @Test("a full disk pauses the store: it stays up and says why, alerts already committed go out, requests wait on the broker; it resumes by itself and loses nothing")
    func fullDiskPauses() async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let flag = FileManager.default.temporaryDirectory.appendingPathComponent("disk-full-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: flag) }
        let store = try StoreProcess(broker: broker)
        try await store.start(extraEnvironment: ["RESTOCK_FAULT": "disk-full-while:\(flag.path)"])
        let client = try broker.storeClient()

        // 20,000 customers wait for the ipad; a restock commits 20,000 alerts, and the disk fills as the first arrives.
        let total = 20_000
        let customers = Requests.customers(total, prefix: "c")
        try await Requests.publish(Requests.subscriptions(customers, to: "ipad"), to: broker.url)
        try await StoreQueues.waitForWatches(total, in: store.dataDirectory, within: 120)
        let alerts = try await AlertCollector(broker: broker, filter: "restock/apple/customers/+/alerts")
        // Connected before, so that the late requests go out at once: the pause must begin while the alerts still go out
        // (20,000 take about a second on an idle machine; a connection per step, as before, sometimes took longer).
        let lateSender = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "late-\(UUID().uuidString.prefix(8))", maxInflight: 1_000))
        try await lateSender.connect()
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"ipad","set":1}"#)
        try await waitUntil("the first alert", within: 90, pollEvery: .milliseconds(1)) { alerts.customers > 0 }
        try Data().write(to: flag)

        // A request sent while the disk is full is refused by the journal before it is acknowledged: the store pauses.
        let later = Requests.customers(200, prefix: "late")
        let sent = try Requests.subscriptions(later, to: "mac").map { try lateSender.send($0.payload, to: $0.topic, qos: .atLeastOnce) }
        try await waitUntil("the store to log that it is paused", within: 90, pollEvery: .milliseconds(2)) {
            store.log.contains("paused journaling requests: ")
        }
        let alertsAtPause = alerts.customers
        print("alerts out when the pause began: \(alertsAtPause) of \(total)")
        for publication in sent { try await publication.acknowledged() }  // by the broker, which keeps them for the store
        await lateSender.disconnect()
        try await waitUntil("the status to say the store is paused", within: 90, pollEvery: .milliseconds(20)) {
            (try? await client.status())?.paused?.contains("the disk is full") == true
        }
        // The alerts committed before go out in full while the store is paused.
        try await waitUntil("\(total) alerts", within: 120) { alerts.customers == total }
        // 48–599 of 20,000 were out when the pause began in runs of the suite; with the suite loading two cores, all of
        // them once. Then this run shows nothing of alerts during a pause (R13 fills a real disk mid fan-out), but every
        // other claim still holds, so it is reported, not failed.
        if alertsAtPause == total { print("every alert was out before the pause began: this run shows nothing of alerts during a pause") }
        #expect(FileManager.default.fileExists(atPath: flag.path))
        #expect(store.exitStatus == nil, "the store stopped: \(store.log.suffix(600))")
        let paused = try await restock(["subscribe", "--broker", broker.url, "--customer", "eve", "--sku", "mac"])
        #expect(paused.status != 0)
        #expect(paused.standardError.hasPrefix("error: store apple takes no requests for now"), "\(paused.standardError)")
        #expect(store.log.components(separatedBy: "paused journaling requests: ").count == 2, "the pause is logged once: \(store.log.suffix(800))")
        #expect(!store.log.contains("Fatal error"))

        // Room again: it resumes by itself, and every request sent while it was paused is applied.
        try FileManager.default.removeItem(at: flag)
        // The once-watches ended with their alerts: what is stored now is the late ones.
        try await StoreQueues.waitForWatches(200, in: store.dataDirectory, within: 60)
        try await waitUntil("the status to say the store takes requests again", within: 90) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.paused == nil
        }
        #expect(store.log.contains("resumed journaling requests"))
        #expect(store.exitStatus == nil)
        try await store.send(SIGTERM)
        await alerts.close()
    }

    func restock(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, within: 60)
    }
}
