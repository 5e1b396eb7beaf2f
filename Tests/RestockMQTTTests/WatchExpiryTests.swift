import Deadlines
import Foundation
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing

/// Watch expiry end to end (docs/contract.md, "Watch expiry"): a real store and a real mosquitto.
@Suite("Watch expiry over MQTT", .serialized, .timeLimit(.minutes(2)))
struct WatchExpiryTests {
    /// Subscribes `who` to `item` with `expiresAt` `seconds` ahead, and returns that time once the store holds the
    /// watch. On a loaded machine the request may reach the store after that time (refused `invalid-expires-at`): it is
    /// sent again, further ahead each time, so only a machine that stays that slow fails the test.
    func subscribe(_ who: String, to item: String, expiringIn seconds: Double, broker: MosquittoBroker, held: @escaping @Sendable () -> Bool) async throws -> Date {
        let errors = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/\(who)/errors")
        for attempt in 0..<4 {
            let expiresAt = Date().addingTimeInterval(seconds * Double(1 << attempt))
            try await mosquittoPub(broker, "restock/apple/subscribe/\(who)", #"{"sku":"\#(item)","expiresAt":"\#(Timestamp.string(from: expiresAt))"}"#)
            try await waitUntil("the watch or its refusal", within: 60) { held() || errors.messages.count > attempt }
            if held() { return expiresAt }
        }
        throw StoreExited(status: -1, log: "every expiresAt was past by the time the store applied it")
    }

    @Test("a watch with expiresAt two seconds ahead ends unalerted, and its mirror is published again without it")
    func endsUnalerted() async throws {
        let broker = try await MosquittoBroker.start()
        let running = try await InProcessStore.start(broker: broker)
        let store = running.service.store
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/#")
        let mirrors = { @Sendable in watcher.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/alice/subscriptions") }
        // bob first, with no expiresAt: alice's watch may end within two seconds of being made.
        try await mosquittoPub(broker, "restock/apple/subscribe/bob", "tv")
        try await waitUntil("bob's watch", within: 60) { store.watch(customer("bob"), of: sku("tv")) != nil }
        let expiresAt = try await subscribe("alice", to: "tv", expiringIn: 2, broker: broker) {
            mirrors().contains { $0.watching.contains { $0.sku == "tv" } }
        }
        let stamp = Timestamp.string(from: expiresAt)
        try await watcher.wait(for: "alice's mirror with expiresAt", within: 60) { _ in mirrors().contains { $0.watching.first?.expiresAt == stamp } }
        // bob's watch has the store's default lifetime (180 days).
        let bobs = store.watch(customer("bob"), of: sku("tv"))?.expiresAt
        #expect(bobs.map { abs($0.timeIntervalSinceNow - 180 * 86_400) < 120 } == true)

        try await waitUntil("alice's watch to end", within: 60) { store.watch(customer("alice"), of: sku("tv")) == nil }
        #expect(Date() >= expiresAt, "the watch ended before its time")
        try await watcher.wait(for: "alice's empty mirror", within: 60) { _ in mirrors().last?.watching.isEmpty == true }

        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"tv","set":5}"#)
        let alerts = { @Sendable (who: String) in watcher.payloads(RestockAlert.self, on: "restock/apple/customers/\(who)/alerts") }
        try await watcher.wait(for: "bob's alert", within: 60) { _ in alerts("bob").count == 1 }
        #expect(alerts("alice").isEmpty, "an expired watch was alerted")
        try await running.stop()
    }

    @Test("a watch that expired while the store was down ends when it starts (restock serve, stopped and started again)")
    func expiresWhileDown() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/alice/subscriptions")
        let mirrors = { @Sendable in watcher.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/alice/subscriptions") }
        let expiresAt = try await subscribe("alice", to: "tv", expiringIn: 3, broker: broker) { mirrors().contains { $0.watching.count == 1 } }
        try await store.send(SIGTERM)
        try await waitUntil("the watch's time to pass", within: 60) { Date() > expiresAt }
        try await store.start()
        try await watcher.wait(for: "alice's empty mirror, published at start", within: 60) { _ in mirrors().last?.watching.isEmpty == true }
        #expect(mirrors().count == 2)
        try await store.send(SIGTERM)
        #expect(try StoreDatabase.snapshot(readingOnly: store.dataDirectory).watches.isEmpty)
    }

    @Test("an expiresAt that is not RFC 3339 UTC, or is past, is refused invalid-expires-at and changes nothing")
    func refused() async throws {
        let broker = try await MosquittoBroker.start()
        let running = try await InProcessStore.start(broker: broker)
        let errors = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/alice/errors")
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", #"{"sku":"tv","expiresAt":"2020-01-01T00:00:00Z"}"#)
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", #"{"sku":"tv","expiresAt":"tomorrow"}"#)
        try await errors.wait(for: "two refusals", within: 60) { watcher in
            watcher.payloads(ErrorReport.self, on: "restock/apple/customers/alice/errors").count(where: { $0.error == "invalid-expires-at" }) == 2
        }
        #expect(running.service.store.watchCount == 0)
        try await running.stop()
    }
}
