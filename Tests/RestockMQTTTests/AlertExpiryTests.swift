import Deadlines
import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing

/// Alert expiry end to end (docs/contract.md, "Alert expiry"): MQTT 5's message expiry interval on a real mosquitto.
@Suite("Alert expiry over MQTT", .timeLimit(.minutes(2)))
struct AlertExpiryTests {
    @Test("a customer who comes back after the alert expiry gets nothing stale; an alert within it arrives")
    func nothingStale() async throws {
        let broker = try await MosquittoBroker.start()
        let running = try await InProcessStore.start(broker: broker) { $0.alertExpiry = .seconds(2) }
        let client = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        // Makes alice's persistent listening session, and leaves it: nobody listens while the first alert is raised.
        try await client.subscribe(customer("alice"), to: sku("tv"), mode: .every, wait: 60)
        let inventory = try await TopicWatcher(broker: broker, filter: "restock/apple/inventory/tv")
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"tv","set":5}"#)
        // The inventory record goes out after the alert, on the same connection: the broker holds the alert by then.
        try await inventory.wait(for: "the first restock", within: 60) { $0.messages.count == 1 }
        let queued = Date()
        try await waitUntil("the alert's expiry to pass", within: 10) { Date() > queued.addingTimeInterval(3) }

        // alice comes back to her session, then a second restock raises a fresh alert.
        let alerts = try await TopicWatcher(
            broker: broker, filter: "restock/apple/customers/alice/alerts", extra: ["-c", "-i", "restock:apple:alice", "-x", "604800"])
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"tv","set":0}"#)
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"tv","set":7}"#)
        let received = { @Sendable in alerts.payloads(RestockAlert.self, on: "restock/apple/customers/alice/alerts") }
        try await alerts.wait(for: "the fresh alert", within: 60) { _ in received().contains { $0.quantity == 7 } }
        #expect(received().map(\.quantity) == [7], "the expired alert was delivered")
        try await running.stop()
    }
}
