import Foundation
import GRDB
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing
import Deadlines

/// What `restock serve` logs (docs/operations.md, "Logs"), read from a real store process.
@Suite("The store's log", .timeLimit(.minutes(4)))
struct StoreLogTests {
    /// Every line of the log, each parsed as a JSON object; fails on one that is not.
    static func entries(_ log: String) throws -> [[String: Any]] {
        try log.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    static func metadata(_ entry: [String: Any]) -> [String: String] { entry["metadata"] as? [String: String] ?? [:] }

    @Test("--log-format json --log-level debug: every line is a JSON object, and an accepted subscribe is logged with its customer, kind and position")
    func jsonAtDebug() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--log-format", "json", "--log-level", "debug"])
        try await store.start()
        let client = try broker.storeClient()
        try await client.subscribe(try CustomerID("alice"), to: try SKU("ipad"), wait: 60)
        try await waitUntil("the accepted subscribe in the log", within: 20) { store.log.contains("accepted a request") }
        try await store.send(SIGTERM)
        let entries = try Self.entries(store.log)
        let accepted = try #require(entries.first { $0["message"] as? String == "accepted a request" })
        #expect(accepted["level"] as? String == "debug" && accepted["label"] as? String == "restock.store")
        #expect(Self.metadata(accepted)["customer"] == "alice" && Self.metadata(accepted)["kind"] == "subscribe", "\(accepted)")
        #expect(Self.metadata(accepted)["position"] == "1" && Self.metadata(accepted)["sku"] == "ipad", "\(accepted)")
        let online = try #require(entries.first { ($0["message"] as? String)?.hasPrefix("store apple online") == true })
        #expect(online["level"] as? String == "info")
        #expect(Self.metadata(online)["version"] == RestockVersion.current, "every start says its release: \(online)")
    }

    @Test("at the default level nothing is logged per accepted request")
    func infoIsQuiet() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        try await client.subscribe(try CustomerID("alice"), to: try SKU("ipad"), wait: 60)
        try await store.send(SIGTERM)
        #expect(!store.log.contains("accepted a request") && store.log.contains(" info restock.store:"), "\(store.log)")
    }

    @Test("a burst of 12,000 subscribes that the store falls behind is logged: a warning with the lag, then a notice when it is back under")
    func lagIsLogged() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--log-format", "json"])
        try await store.start()
        // The store falls behind for sure: another process holds its state's write lock while the burst comes, so the
        // requests are journaled and none is applied (as an operator's `sqlite3 … 'BEGIN IMMEDIATE'` would). Without it
        // a fast store on a busy machine kept up with the publisher, and there was nothing to log.
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: store.dataDirectory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        try holder.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        let customers = Requests.customers(12_000, prefix: "burst")
        try await Requests.publish(Requests.subscriptions(customers, to: "ipad"), to: broker.url)
        try await waitUntil("the store to warn that it is behind", within: 30) { store.log.contains("behind the journal") }
        try holder.inDatabase { db in try db.execute(sql: "ROLLBACK") }
        try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 120)
        do {
            try await waitUntil("the store to say it caught up", within: 20) { store.log.contains("caught up with the journal") }
        } catch {
            Issue.record("\(error); the store's log ends: \(store.log.suffix(3_000))")
            return
        }
        try await store.send(SIGTERM)
        let entries = try Self.entries(store.log)
        let behind = entries.filter { ($0["message"] as? String)?.contains("behind the journal") == true && $0["level"] as? String == "warning" }
        let lag = try #require(behind.first.flatMap { Self.metadata($0)["lag"] }.flatMap { Int($0) }, "no lag warning: \(store.log.suffix(2_000))")
        #expect(lag > 1_000 && lag <= 12_000)
        // The burst lasts seconds, not a minute: one warning.
        // One episode on an idle machine; on a loaded one the lag can last past a minute ("still … behind") or fall
        // under a tenth and rise again: each episode is one first warning, and ends with one notice.
        let episodes = behind.filter { ($0["message"] as? String)?.contains("is still") == false }
        let caughtUp = entries.filter { ($0["message"] as? String)?.contains("caught up with the journal") == true }
        #expect(episodes.count >= 1 && caughtUp.count == episodes.count, "\(behind) \(caughtUp)")
        #expect(caughtUp.allSatisfy { $0["level"] as? String == "notice" }, "\(caughtUp)")
        print("lag warning at \(lag) requests behind; \(caughtUp.first?["message"] ?? "")")
    }

    @Test("a publishing connection the broker drops is a warning with the broker's reason (issue 32: it was not logged at all)")
    func publishingConnectionDropped() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let instance = try #require(try await client.status()?.instance)
        // Another client takes the publishing connection's client id: mosquitto 2.0 closes the store's connection (without
        // an MQTT 5 DISCONNECT, so the reason is libmosquitto's); the store connects again at once.
        let intruder = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "restock:apple:@\(instance)", reconnect: .default))
        try await intruder.connect()
        await intruder.disconnect()
        try await waitUntil("the warning in the log", within: 20) { store.log.contains("publishing connection to the broker was lost") }
        let line = try #require(store.log.split(separator: "\n").first { $0.contains("publishing connection to the broker was lost") })
        #expect(line.contains(" warning ") && line.contains("reason=The connection was lost."), "\(line)")
        try await store.send(SIGTERM)
    }
}
