import RestockPipeline
import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Synchronization
import Testing
import Deadlines
import LocalBroker

/// docs/contract.md, "Durability and redelivery": a restart of the store, of the broker, or of both loses no watch and no alert.
@Suite("Durability: nothing is lost", .timeLimit(.minutes(3)))
struct DurabilityTests {
    @Test("the store killed with SIGKILL in the middle of a fan-out to 3,000 customers alerts them all after a restart")
    func killDuringFanOut() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let data = store.dataDirectory
        let collector = try await fanOutBegun(store, on: broker)
        try await store.send(SIGKILL)
        let beforeRestart = collector.customers

        try await store.start()
        try await waitUntil("every customer alerted", within: 90) { collector.customers == 3_000 }
        let ids = collector.idsByCustomer
        #expect(ids.count == 3_000)
        #expect(ids.values.allSatisfy { $0.count == 1 }, "a duplicate carried a different id")
        #expect(Set(ids.values.flatMap { $0 }).count == 3_000, "alert ids are unique across customers")
        print("fan-out: \(beforeRestart) customers alerted before SIGKILL, \(collector.total) deliveries for 3000 customers in all")

        try await store.send(SIGTERM)
        let snapshot = try StoreDatabase.snapshot(readingOnly: data)
        #expect(snapshot.watches.count == 3_000, "every watch kept")
        #expect(Set(snapshot.watches.map(\.position)) == Set(1...3_000), "positions kept")
        #expect(snapshot.watches.allSatisfy { !$0.isWaiting }, "every watch committed as alerted")
        #expect(snapshot.inventory[sku("switch-2")] == 10)
        await collector.close()
    }

    @Test("requests the store had acknowledged but not yet committed survive a SIGKILL")
    func acknowledgedRequestsSurvive() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let data = store.dataDirectory
        let sending = Task { try await subscribeAll(4_000, through: broker, mode: "once") }
        try await waitUntil("the store to be busy", within: 30) { storedWatches(data) > 100 }
        try await store.send(SIGKILL)
        let atKill = storedWatches(data)
        try await sending.value
        try await store.start()
        try await waitUntil("all 4,000 requests applied", within: 90) { storedWatches(data) == 4_000 }
        print("requests: \(atKill) of 4000 committed at SIGKILL; all 4000 after restart")
        let snapshot = try StoreDatabase.snapshot(readingOnly: data)
        #expect(Set(snapshot.watches.map(\.customer.rawValue)) == Set((0..<4_000).map { "c\($0)" }))
        try await store.send(SIGTERM)
    }

    @Test("a customer offline during the restock receives the alert when it comes back")
    func offlineCustomer() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        // A first listen creates alice's persistent session, then she goes away.
        let first = try await ChildProcess.run(restockExecutable, ["listen", "--broker", broker.url, "--customer", "alice", "--timeout", "1"])
        #expect(first.status == 0, "\(first.standardError)")
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "airpods-pro")
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"airpods-pro","set":4}"#)
        let outbox = try await TopicWatcher(broker: broker, filter: "restock/apple/inventory/airpods-pro")
        try await outbox.wait(for: "the restock") { !$0.messages.isEmpty }

        let back = try await ChildProcess.run(
            restockExecutable, ["listen", "--broker", broker.url, "--customer", "alice", "--count", "1", "--timeout", "20", "--json"])
        #expect(back.status == 0, "\(back.standardError)")
        let alert = try RestockAlert(jsonData: Data(back.standardOutput.utf8))
        #expect(alert.customer == customer("alice") && alert.sku == sku("airpods-pro") && alert.quantity == 4)
        try await store.send(SIGTERM)
    }

    @Test("the broker killed and restarted under a running store: the store carries on by itself")
    func brokerRestart() async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let store = try await StoreProcess.started(on: broker)
        let data = store.dataDirectory
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", #"{"sku":"ipad","mode":"every"}"#)
        try await waitUntil("alice's watch stored") { storedWatches(data) == 1 }

        try await broker.kill()
        try await broker.launch()

        let client = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        try await waitUntil("the store back online", within: 30) { (try? await client.status())?.isOnline == true }
        let alerts = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/+/alerts")
        try await client.subscribe(customer("bob"), to: sku("ipad"), mode: .every, wait: 20)
        try await client.changeStock(of: sku("ipad"), .set(2), wait: 20)
        try await alerts.wait(for: "alice and bob alerted", within: 30) { $0.messages.count == 2 }
        #expect(Set(alerts.messages.map(\.topic)) == ["restock/apple/customers/alice/alerts", "restock/apple/customers/bob/alerts"])
        #expect(store.log.contains("reconnected"))
        try await store.send(SIGTERM)
    }

    @Test("a broker restarted without persistence gets every retained topic back: status, inventory and mirrors")
    func brokerLosesRetained() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let client = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        try await client.subscribe(customer("alice"), to: sku("ipad"), wait: 60)
        try await client.subscribe(customer("bob"), to: sku("vision"), mode: .every, minQuantity: 3, wait: 60)
        try await client.changeStock(of: sku("pencil"), .set(7), wait: 60)
        // carol watched something once: the store told her she watches nothing, and owns that mirror too.
        try await client.subscribe(customer("carol"), to: sku("ipad"), wait: 60)
        try await client.unsubscribe(customer("carol"), from: nil, wait: 60)
        #expect(store.log.contains("connected to the broker") && !store.log.contains("reconnected"), "the first connection is not a reconnection")

        try await broker.stop()  // no persistence: every retained message and the store's session are gone
        try await broker.launch()
        let clock = ContinuousClock(), back = clock.now
        try await waitUntil("every retained topic back", within: 60) {
            let inventory = (try? await client.inventory()) ?? []
            let alice = try? await client.watching(customer("alice"))
            let bob = try? await client.watching(customer("bob"))
            let carol = try? await client.watching(customer("carol"))
            return inventory.map(\.sku) == ["pencil"] && inventory.first?.quantity == 7 && alice?.watching.map(\.sku) == ["ipad"]
                && bob?.watching.first?.minQuantity == 3 && carol?.watching.isEmpty == true
        }
        print("retained topics back \(clock.now - back) after the broker was started again")
        #expect(try await client.status()?.isOnline == true)
        try await store.send(SIGTERM)
    }

    @Test("SIGTERM with the broker gone and alerts still queued ends within the drain timeout, and loses nothing")
    func stopWithBrokerGone() async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let store = try StoreProcess(broker: broker, extraArguments: ["--drain-timeout", "1"])
        try await store.start()
        let collector = try await fanOutBegun(store, on: broker)
        // Stopped cleanly, so that it saves what it has acknowledged (a SIGKILLed broker loses up to its autosave
        // interval: R2's concern, not the store's).
        try await broker.stop()
        let clock = ContinuousClock(), stopped = clock.now
        try await store.send(SIGTERM)
        let took = clock.now - stopped
        // The drain gives up after its second; the rest is the process winding down. A store that waited for the broker
        // would never end: the bound catches that, not a slow machine (8.5 s seen while another suite loaded it).
        #expect(took < .seconds(30), "SIGTERM took \(took)")
        // Usually mid fan-out; on a fast machine the fan-out may have finished before the broker went.
        #expect(store.log.contains("left in the outbox") || store.log.contains("the outbox is empty"), "\(store.log.suffix(300))")
        try await broker.launch()
        try await store.start()
        do {
            try await waitUntil("every customer alerted", within: 60) { collector.customers == 3_000 }
        } catch {
            Issue.record("\(collector.customers) customers alerted; outbox \((try? StoreDatabase.queueLengths(readingOnly: store.dataDirectory).outbox) ?? -1); log: \(store.log.suffix(800))")
        }
        try await store.send(SIGTERM)
        await collector.close()
    }

    @Test("SIGTERM during a fan-out drains the outbox: after a restart nothing is sent again, nothing lost")
    func drainOnShutdown() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--drain-timeout", "30"])
        try await store.start()
        let data = store.dataDirectory
        let collector = try await fanOutBegun(store, on: broker)
        try await store.send(SIGTERM)
        #expect(store.log.contains("the outbox is empty"), "\(store.log.suffix(400))")
        #expect(try StoreDatabase.queueLengths(readingOnly: data).outbox == 0)
        try await waitUntil("every customer alerted", within: 30) { collector.customers == 3_000 }
        try await store.start()
        // A request after the restart: once it is answered, anything resent at the start has arrived before it.
        let client = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        try await client.changeStock(of: sku("marker"), .set(1), wait: 20)
        #expect(collector.total == 3_000, "\(collector.total - 3_000) alerts sent again after a clean stop")
        try await store.send(SIGTERM)
        await collector.close()
    }
}
