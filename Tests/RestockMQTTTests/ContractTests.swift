import Foundation
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing

/// docs/contract.md, "Topics" end to end: a real `restock serve`, driven only by `mosquitto_pub` and watched by `mosquitto_sub`.
@Suite("The topic contract, from outside", .timeLimit(.minutes(2)))
struct ContractTests {
    @Test("subscribe, alert, mirror, inventory, status and unsubscribe, exactly as the contract's topic table says")
    func contract() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/#")

        try await watcher.wait(for: "the retained online status") {
            $0.payloads(StoreStatus.self, on: "restock/apple/status").first?.isOnline == true
        }

        // A bare SKU, then JSON with every field.
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "iphone-15")
        try await mosquittoPub(broker, "restock/apple/subscribe/bob", #"{"sku":"iphone-15","mode":"every","minQuantity":2}"#)
        try await watcher.wait(for: "both mirrors") {
            !$0.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/bob/subscriptions").isEmpty
        }
        let aliceMirror = try #require(watcher.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/alice/subscriptions").last)
        #expect(aliceMirror.store == "apple" && aliceMirror.customer == "alice")
        #expect(aliceMirror.watching.map(\.sku) == ["iphone-15"] && aliceMirror.watching[0].mode == .once)
        #expect(aliceMirror.watching[0].minQuantity == 1 && aliceMirror.watching[0].position == 1)
        let bobMirror = try #require(watcher.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/bob/subscriptions").last)
        #expect(bobMirror.watching.first?.mode == .every && bobMirror.watching.first?.minQuantity == 2)
        #expect(bobMirror.watching.first?.position == 2)
        // The raw mirror has exactly the fields of the contract.
        let rawMirror = try #require(watcher.messages.last { $0.topic == "restock/apple/customers/alice/subscriptions" })
        let mirrorKeys = try #require(try JSONSerialization.jsonObject(with: Data(rawMirror.payload.utf8)) as? [String: Any]).keys
        #expect(Set(mirrorKeys) == ["store", "customer", "watching", "updatedAt"])

        // One unit: alice (minQuantity 1) is alerted; bob needs 2.
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"iphone-15","set":1}"#)
        try await watcher.wait(for: "alice's alert") {
            !$0.payloads(RestockAlert.self, on: "restock/apple/customers/alice/alerts").isEmpty
        }
        let raw = try #require(watcher.messages.first { $0.topic == "restock/apple/customers/alice/alerts" })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(raw.payload.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["version", "id", "store", "customer", "sku", "quantity", "position", "message", "at"])
        #expect(object["version"] as? Int == 1 && object["quantity"] as? Int == 1 && object["position"] as? Int == 1)
        #expect(Timestamp.date(from: object["at"] as? String ?? "") != nil)
        try await watcher.wait(for: "the inventory record") {
            !$0.payloads(InventoryRecord.self, on: "restock/apple/inventory/iphone-15").isEmpty
        }
        let inventory = try #require(watcher.payloads(InventoryRecord.self, on: "restock/apple/inventory/iphone-15").last)
        #expect(inventory.quantity == 1 && inventory.store == "apple" && inventory.sku == "iphone-15")
        #expect(watcher.payloads(RestockAlert.self, on: "restock/apple/customers/bob/alerts").isEmpty)

        // add: +1 makes 2, bob's turn.
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"iphone-15","add":1}"#)
        try await watcher.wait(for: "bob's alert") {
            $0.payloads(RestockAlert.self, on: "restock/apple/customers/bob/alerts").first?.quantity == 2
        }

        // The once watch is gone from alice's retained mirror; a late reader sees it retained.
        let late = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/+/subscriptions")
        try await late.wait(for: "the retained mirrors") { $0.messages.count >= 2 }
        #expect(late.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/alice/subscriptions").last?.watching.isEmpty == true)
        #expect(late.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/bob/subscriptions").last?.watching.count == 1)

        // Unsubscribe: bare SKU, then {"all":true}.
        try await mosquittoPub(broker, "restock/apple/subscribe/bob", "ipad")
        try await mosquittoPub(broker, "restock/apple/unsubscribe/bob", "iphone-15")
        try await mosquittoPub(broker, "restock/apple/unsubscribe/bob", #"{"all":true}"#)
        try await watcher.wait(for: "bob's empty mirror") {
            let mirrors = $0.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/bob/subscriptions")
            // Requests applied in one batch share one mirror update, so only the final state is certain.
            return mirrors.count >= 2 && mirrors.last?.watching.isEmpty == true
        }
        // Unsubscribing from nothing is not an error.
        try await mosquittoPub(broker, "restock/apple/unsubscribe/carol", "iphone-15")
        try await watcher.wait(for: "carol's mirror") {
            !$0.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/carol/subscriptions").isEmpty
        }
        #expect(watcher.messages.filter { $0.topic.hasSuffix("/errors") }.isEmpty)

        try await store.send(SIGTERM)
        try await watcher.wait(for: "the offline status") {
            $0.payloads(StoreStatus.self, on: "restock/apple/status").last?.isOnline == false
        }
    }

    @Test("refused requests are answered on the errors topic, change nothing, and the store keeps serving")
    func refusals() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/#")

        let hostile: [(String, [UInt8], String)] = [
            ("restock/apple/subscribe/mallory", Array(#"{"sku":"#.utf8), "invalid-json"),
            ("restock/apple/subscribe/mallory", Array(repeating: UInt8(ascii: "a"), count: 5_000), "payload-too-large"),
            ("restock/apple/subscribe/mallory", [0x7B, 0xFF, 0xFE, 0x7D], "invalid-utf8"),
            ("restock/apple/subscribe/mallory", Array(#"{"sku":"a/b"}"#.utf8), "invalid-sku"),
            ("restock/apple/subscribe/mallory", Array(#"{"sku":"ok","minQuantity":0}"#.utf8), "invalid-min-quantity"),
            ("restock/apple/subscribe/mallory", Array(#"{"sku":"ok","minQuantity":"2"}"#.utf8), "invalid-field"),
            ("restock/apple/subscribe/mallory", Array(#"{"sku":"ok","mode":"sometimes"}"#.utf8), "invalid-mode"),
            ("restock/apple/unsubscribe/mallory", Array(#"{"all":false}"#.utf8), "invalid-field"),
            ("restock/apple/admin/stock", Array(#"{"sku":"ok","set":-1}"#.utf8), "invalid-quantity"),
            ("restock/apple/admin/stock", Array(#"{"sku":"ok","set":1,"add":2}"#.utf8), "invalid-field"),
            ("restock/apple/admin/stock", Array("ok".utf8), "invalid-json"),
        ]
        for (topic, payload, _) in hostile { try await mosquittoPub(broker, topic, bytes: payload) }
        // A customer id that is not valid gets no answer (there is no topic to answer on), and no change.
        try await mosquittoPub(broker, "restock/apple/subscribe/bad%20id", "iphone-15")

        try await watcher.wait(for: "every refusal answered") { $0.messages.filter { $0.topic.hasSuffix("/errors") }.count == hostile.count }
        let customerErrors = watcher.payloads(ErrorReport.self, on: "restock/apple/customers/mallory/errors")
        let adminErrors = watcher.payloads(ErrorReport.self, on: "restock/apple/admin/errors")
        #expect((customerErrors + adminErrors).map(\.error) == hostile.map(\.2))
        #expect(customerErrors.allSatisfy { $0.topic.hasPrefix("restock/apple/") && !$0.detail.isEmpty })
        #expect(watcher.messages.filter { $0.topic.hasSuffix("/subscriptions") }.isEmpty, "nothing changed")
        #expect(watcher.messages.filter { $0.topic.contains("/inventory/") }.isEmpty, "nothing changed")

        // Still serving.
        try await mosquittoPub(broker, "restock/apple/subscribe/mallory", #"{"sku":"ok","unknownField":[1,2,3]}"#)
        try await watcher.wait(for: "a valid request after the hostile ones") {
            $0.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/mallory/subscriptions").last?.watching.count == 1
        }
        try await store.send(SIGTERM)
    }
}
