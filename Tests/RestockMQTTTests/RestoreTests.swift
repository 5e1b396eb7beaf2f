import Foundation
import GRDB
import LocalBroker
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing
import Deadlines

/// A store started on a restored backup makes the broker agree with it (docs/operations.md, "Backup and restore").
@Suite("Restores", .timeLimit(.minutes(8)))
struct RestoreTests {
    struct Mirror: Decodable {
        struct Entry: Decodable { let sku: String }
        let customer: String
        let watching: [Entry]
    }

    /// The retained messages the broker holds under `filter` now, topic → payload: every one has arrived when a
    /// message published after the subscription comes back.
    func retained(on broker: MosquittoBroker, _ filter: String, fence: String) async throws -> [String: String] {
        let watcher = try await TopicWatcher(broker: broker, filter: filter)
        try await mosquittoPub(broker, fence, "fence")
        try await watcher.wait(for: "the fence after the retained messages", within: 60) { $0.messages.contains { $0.topic == fence } }
        var latest: [String: String] = [:]
        for message in watcher.messages where message.topic != fence { latest[message.topic] = message.payload }
        return latest
    }

    @Test("a store started on a backup makes the broker's retained mirrors and inventory agree with its state: mirrors of customers it has no watch for are cleared, the others and its inventory published again")
    func restoredStoreAgreesWithBroker() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        let early = Requests.customers(12_000, prefix: "c")
        try await Requests.publish(Requests.subscriptions(early, to: "ipad", mode: "every"), to: broker.url)
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"mac","set":5}"#)
        try await StoreQueues.waitForWatches(early.count, in: store.dataDirectory, within: 120)
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("backup-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: backup) }
        let taken = try await ChildProcess.run(restockExecutable, ["backup", "--data", store.dataDirectory.path, "--to", backup.path], within: 60)
        #expect(taken.status == 0, "\(taken.standardError)")

        // After the backup: 500 new customers, 100 who leave, a new SKU in stock.
        let late = Requests.customers(500, prefix: "late")
        let leaving = early.prefix(100).map { ("restock/apple/unsubscribe/\($0)", Array("ipad".utf8)) }
        try await Requests.publish(Requests.subscriptions(late, to: "ipad") + leaving, to: broker.url)
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"tv","set":3}"#)
        try await StoreQueues.waitForWatches(early.count + late.count - leaving.count, in: store.dataDirectory, within: 120)
        try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 60)
        try await store.send(SIGTERM)

        let restored = try StoreProcess(broker: broker, dataDirectory: backup)
        try await restored.start()
        try await StoreQueues.waitUntilDrained(backup, within: 120)
        let mirrors = try await retained(on: broker, "restock/apple/customers/+/subscriptions", fence: "restock/apple/customers/zz-fence/subscriptions")
        let watching = mirrors.compactMapValues { try? JSONDecoder().decode(Mirror.self, from: Data($0.utf8)).watching.map(\.sku) }
        #expect(watching.count == mirrors.count, "a retained mirror that is not one")
        #expect(Set(watching.keys) == Set(early.map { "restock/apple/customers/\($0)/subscriptions" }), "\(watching.count) mirrors")
        #expect(watching.values.allSatisfy { $0 == ["ipad"] })
        let inventory = try await retained(on: broker, "restock/apple/inventory/+", fence: "restock/apple/inventory/zz-fence")
        #expect(Set(inventory.keys) == ["restock/apple/inventory/mac"], "\(inventory)")
        #expect(restored.log.contains("started on a restored backup"), "\(restored.log.suffix(800))")

        // The mark is gone: the next start is a normal one.
        try await restored.send(SIGTERM)
        try await restored.start()
        #expect(!restored.log.contains("started on a restored backup"), "\(restored.log.suffix(800))")
        try await restored.send(SIGTERM)
    }
}
