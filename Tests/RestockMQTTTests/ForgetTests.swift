import Deadlines
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing

/// Forgetting a customer end to end (docs/contract.md, "Forget a customer"): `restock forget` against `restock serve`
/// and a real mosquitto.
@Suite("Forget a customer", .timeLimit(.minutes(3)))
struct ForgetTests {
    func restock(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, within: 60)
    }

    /// Every file of `directory` whose bytes contain `text`, as `grep -a -l` finds them.
    func files(in directory: URL, containing text: String) throws -> [String] {
        let needle = Data(text.utf8)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted().filter { name in
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            return data.range(of: needle) != nil
        }
    }

    @Test("after restock forget and a clean stop, the customer's id is in no file of the data directory, and their retained mirror is gone")
    func forgotten() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        let client = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        let zelda = customer("zelda-erase-7f3q"), bob = customer("bob-keep-2k9x")
        // Watches, an alert, a refusal, and a mirror: rows of every kind about zelda, and about bob.
        for who in [zelda, bob] {
            try await client.subscribe(who, to: sku("tv"), mode: .every, wait: 60)
            try await client.subscribe(who, to: sku("radio"), wait: 60)
            try await mosquittoPub(broker, appleTopics.subscribe(who), "not a sku!")
        }
        try await client.changeStock(of: sku("tv"), .set(3), wait: 60)
        try await client.unsubscribe(zelda, from: sku("radio"), wait: 60)
        #expect(try files(in: store.dataDirectory, containing: zelda.rawValue) != [], "the check finds nothing even before")

        let forget = try await restock(["forget", "--broker", broker.url, "--customer", zelda.rawValue, "--wait", "60"])
        #expect(forget.status == 0, "\(forget.standardError)")
        #expect(forget.standardOutput.contains("\(zelda) is forgotten (1 watches removed)"), "\(forget.standardOutput)")

        let mirrors = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/+/subscriptions")
        try await mirrors.wait(for: "bob's retained mirror", within: 60) { $0.messages.contains { $0.topic == appleTopics.subscriptions(bob) } }
        #expect(!mirrors.messages.contains { $0.topic == appleTopics.subscriptions(zelda) }, "zelda's retained mirror is still on the broker")
        #expect(try await client.watching(zelda) == nil)

        try await store.send(SIGTERM)
        #expect(store.exitStatus == 0, "\(store.log)")
        let left = try files(in: store.dataDirectory, containing: zelda.rawValue)
        #expect(left == [], "grep -a finds the forgotten id in \(left): \(store.log)")
        #expect(try files(in: store.dataDirectory, containing: bob.rawValue) != [], "bob is kept")
        let snapshot = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
        #expect(snapshot.watches.map(\.customer) == [bob, bob])
    }

    @Test("a forget request that is not a JSON object with a customer id is refused on admin/errors and changes nothing")
    func refused() async throws {
        let broker = try await MosquittoBroker.start()
        let running = try await InProcessStore.start(broker: broker)
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "tv")
        try await waitUntil("alice's watch", within: 60) { running.service.store.watchCount == 1 }
        let errors = try await TopicWatcher(broker: broker, filter: "restock/apple/admin/errors")
        for payload in ["alice", #"{"customer":"not an id!"}"#, #"{"customer":5}"#, "{}"] {
            try await mosquittoPub(broker, "restock/apple/admin/forget", payload)
        }
        try await errors.wait(for: "four refusals", within: 60) { $0.payloads(ErrorReport.self, on: "restock/apple/admin/errors").count == 4 }
        let codes = errors.payloads(ErrorReport.self, on: "restock/apple/admin/errors").map(\.error)
        #expect(codes == ["invalid-json", "invalid-customer", "invalid-field", "invalid-field"])
        #expect(running.service.store.watchCount == 1)
        try await running.stop()
    }
}
