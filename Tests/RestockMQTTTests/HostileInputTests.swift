import RestockPipeline
import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing
import Deadlines

/// Nothing a client sends can stop or corrupt the store: numbers at the edges, retained requests, and a
/// request that crashes the store (a bug not found yet, stood in for by a fault point).
@Suite("Hostile input: contained, refused, never replayed", .timeLimit(.minutes(3)))
struct HostileInputTests {
    @Test("numbers at the edges of Int are refused with the field's range, and the store keeps serving")
    func boundaryNumbers() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/#")
        let requests: [(String, String, String)] = [
            ("restock/apple/subscribe/mallory", #"{"sku":"x","minQuantity":-9223372036854775808}"#, "invalid-min-quantity"),
            ("restock/apple/subscribe/mallory", #"{"sku":"x","minQuantity":9223372036854775807}"#, "invalid-min-quantity"),
            ("restock/apple/subscribe/mallory", #"{"sku":"x","minQuantity":1e19}"#, "invalid-min-quantity"),
            ("restock/apple/admin/stock", #"{"sku":"x","set":-9223372036854775808}"#, "invalid-quantity"),
            ("restock/apple/admin/stock", #"{"sku":"x","add":-9223372036854775808}"#, "invalid-quantity"),
            ("restock/apple/admin/stock", #"{"sku":"x","add":-999999999999999999}"#, "invalid-quantity"),
        ]
        for (topic, payload, _) in requests { try await mosquittoPub(broker, topic, payload) }
        try await mosquittoPub(broker, "restock/apple/subscribe/mallory", bytes: Array(repeating: UInt8(ascii: "a"), count: 70_000))
        try await watcher.wait(for: "every refusal answered") { $0.messages.filter { $0.topic.hasSuffix("/errors") }.count == requests.count + 1 }
        let reports = watcher.payloads(ErrorReport.self, on: "restock/apple/customers/mallory/errors")
            + watcher.payloads(ErrorReport.self, on: "restock/apple/admin/errors")
        #expect(Set(reports.map(\.error)) == Set(requests.map(\.2) + ["payload-too-large"]))
        #expect(reports.filter { $0.error != "payload-too-large" }.allSatisfy { $0.detail.contains("1000000000") }, "each refusal states the limit")
        #expect(reports.first { $0.error == "payload-too-large" }?.detail.contains("70000 bytes") == true)
        #expect(store.exitStatus == nil, "the store still runs")

        // The limits themselves are accepted.
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"x","set":1000000000}"#)
        try await mosquittoPub(broker, "restock/apple/subscribe/mallory", #"{"sku":"y","minQuantity":1000000000}"#)
        try await watcher.wait(for: "the limits accepted") {
            $0.payloads(InventoryRecord.self, on: "restock/apple/inventory/x").last?.quantity == 1_000_000_000
                && $0.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/mallory/subscriptions").last?.watching.first?.minQuantity
                    == 1_000_000_000
        }
        try await store.send(SIGTERM)
    }

    @Test("a retained request is never applied, at any start, and is answered retained-request; an empty retained message that clears one is not answered", arguments: ["5", "3.1.1"])
    func retainedRequests(mqttVersion: String) async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--mqtt-version", mqttVersion])
        // Published retained before the store ever ran: under 3.1.1 the broker sends it at every subscribe.
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"r1","add":5}"#, retain: true)
        try await store.start()
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/#")
        if mqttVersion == "5" {
            // Published retained while the store listens: it keeps its retain flag (retain as published).
            try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"r2","add":5}"#, retain: true)
            try await watcher.wait(for: "the live retained request refused") {
                $0.payloads(ErrorReport.self, on: "restock/apple/admin/errors").contains { $0.error == "retained-request" }
            }
        }
        for _ in 0..<2 {
            try await store.send(SIGTERM)
            try await store.start()
        }
        let erinErrors = "restock/apple/customers/erin/errors"
        if mqttVersion == "5" {
            // A retained subscribe, refused; its sender then clears it (an empty retained message), which asks nothing
            // and is not answered (it was refused retained-request: found by an outside trial).
            try await mosquittoPub(broker, "restock/apple/subscribe/erin", "ipad", retain: true)
            try await watcher.wait(for: "the retained subscribe refused") { !$0.payloads(ErrorReport.self, on: erinErrors).isEmpty }
            try await mosquittoPub(broker, "restock/apple/subscribe/erin", "", retain: true)
        }
        // A live request after the restarts: once it is applied, everything before it has been.
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"live","add":1}"#)
        try await watcher.wait(for: "the live request applied") { !$0.payloads(InventoryRecord.self, on: "restock/apple/inventory/live").isEmpty }
        if mqttVersion == "5" {
            #expect(watcher.payloads(ErrorReport.self, on: erinErrors).map(\.error) == ["retained-request"], "the clearing is not answered")
        }
        let inventory = try StoreDatabase.snapshot(readingOnly: store.dataDirectory).inventory
        #expect(inventory.keys.map(\.rawValue) == ["live"], "no retained request was applied")
        let refusals = watcher.payloads(ErrorReport.self, on: "restock/apple/admin/errors")
        let allRetainedRequests = refusals.allSatisfy { $0.error == "retained-request" && $0.detail.contains("without retain") }
        #expect(!refusals.isEmpty && allRetainedRequests, "\(refusals)")
        try await store.send(SIGTERM)
        // Clean up the retained requests, as their sender would.
        try await mosquittoPub(broker, "restock/apple/admin/stock", "", retain: true)
    }

    @Test("a request that crashes the store is retried alone, then dead-lettered and answered request-failed; the others are applied")
    func crashContainment() async throws {
        let broker = try await MosquittoBroker.start()
        let fault = ["RESTOCK_FAULT": "trap-on-request:poison"]
        let store = try StoreProcess(broker: broker, environment: fault)
        try await store.start()
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/#")
        let client = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "requests-\(UUID().uuidString.prefix(6))"))
        try await client.connect()
        let sent = try [("before", "ok-1"), ("mallory", "poison"), ("after", "ok-2")].map { customer, sku in
            try client.send(Array(#"{"sku":"\#(sku)"}"#.utf8), to: "restock/apple/subscribe/\(customer)")
        }
        for publication in sent { try await publication.acknowledged() }
        await client.disconnect()

        // It dies applying the batch, then again retrying the poison request alone.
        for attempt in 1...2 {
            try await waitUntil("the store to die (attempt \(attempt))", within: 30) { store.exitStatus != nil }
            if attempt == 1 { try store.launch() }
        }
        #expect(store.log.contains("applying them one at a time"))
        // The third start sets it aside and carries on. The batch was applied while its sync was under way: when the
        // store died before acknowledging it, the broker delivers the poison request again, and that copy is retried
        // alone and set aside in turn (docs/contract.md, "Durability and redelivery"): two deaths more at most.
        // Launched, not started: the copy may kill it before its status is read online (it did in local CI beside the
        // whole run, and start() took that death for a failed start); the loop counts each death either way.
        var deaths = 2
        _ = try store.launch()
        while true {
            let done = try await watcher.waitUnless({ store.exitStatus != nil }, for: "the request-failed error and the other requests applied") { watcher in
                watcher.payloads(ErrorReport.self, on: "restock/apple/customers/mallory/errors").contains { $0.error == "request-failed" }
                    && watcher.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/after/subscriptions").last?.watching.count == 1
                    && watcher.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/before/subscriptions").last?.watching.count == 1
            }
            if done { break }
            deaths += 1
            try #require(deaths <= 4, "the store died \(deaths) times for one poison request")
            _ = try store.launch()
        }
        let report = try #require(watcher.payloads(ErrorReport.self, on: "restock/apple/customers/mallory/errors").first)
        #expect(report.topic == "restock/apple/subscribe/mallory")
        let snapshot = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
        #expect(snapshot.watches.map(\.customer.rawValue).sorted() == ["after", "before"])
        // Restarting again does not bring it back: the store stays up, and its inbox drains. (Read once right after the
        // start, the inbox held one request in a clean-clone CI run on a loaded machine, 130 s into this test; which one
        // was not recorded. Waiting tells a request on its way through from one left behind, which this still fails on.)
        try await store.send(SIGTERM)
        try await store.start()
        try await waitUntil("the inbox to drain after the restart", within: 30) {
            if let status = store.exitStatus { throw StoreExited(status: status, log: String(store.log.suffix(1_500))) }
            return try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).inbox == 0
        }
        #expect(try StoreDatabase.snapshot(readingOnly: store.dataDirectory).watches.map(\.customer.rawValue).sorted() == ["after", "before"])
        #expect(store.exitStatus == nil, "\(store.log.suffix(1_500))")
        try await store.send(SIGTERM)
    }
}
