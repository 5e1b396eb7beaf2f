import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing

/// A customer id with a `.` has a new client id (`restock:apple:j~doe`, since NATS refuses a `.`): the shipped plugin
/// gives it to the same user, and the customer's next listen takes what the session of before holds and ends it.
@Suite("Dotted customers' client ids", .timeLimit(.minutes(3)))
struct ClientIDMigrationTests {
    @Test("the shipped plugin gives j.doe both ids, and no one else either (failed before: j.doe was refused as restock:apple:j~doe)")
    func pluginBindsTheNewID() async throws {
        let broker = try await MosquittoBroker.shipped(users: ["j.doe": "doe-secret", "j~doe": "tilde-secret", "store-shop.eu": "shop-secret"])
        defer { Task { try? await broker.stop() } }
        let cases: [(user: String, password: String, clientID: String, allowed: Bool)] = [
            ("j.doe", "doe-secret", "restock:apple:j~doe", true),
            ("j.doe", "doe-secret", "restock:apple:j.doe", true),  // the id of before, for the migration
            ("j~doe", "tilde-secret", "restock:apple:j~doe", false),  // a '~' stands for a '.' only
            ("alice", "alice-secret", "restock:apple:j~doe", false),
            ("j.doe", "doe-secret", "restock:apple:jxdoe", false),
            ("store-shop.eu", "shop-secret", "restock:shop~eu", true),
            ("store-shop.eu", "shop-secret", "restock:shop~eu:@0123abcd", true),
            ("store-apple", "store-secret", "restock:shop~eu", false),
        ]
        for entry in cases {
            let client = try MQTTClient(
                configuration: .init(
                    broker: try BrokerAddress(url: broker.url), clientID: entry.clientID, username: entry.user, password: entry.password))
            var connected = false
            do {
                _ = try await client.connect()
                connected = true
                await client.disconnect()
            } catch MQTTError.connectionRefused {}
            #expect(connected == entry.allowed, "\(entry.user) as \(entry.clientID): connected \(connected)")
        }
    }

    @Test("listen takes the alerts the old session holds and ends it (failed before: the old session stayed, and kept every alert from then on)")
    func listenMigratesTheOldSession() async throws {
        let broker = try await MosquittoBroker.start()
        defer { Task { try? await broker.stop() } }
        let customer = try CustomerID("j.doe"), topics = appleTopics
        let address = try BrokerAddress(url: broker.url)
        // j.doe's session of before, subscribed, then away while an alert arrives for it.
        let old = try MQTTClient(configuration: .init(broker: address, clientID: "restock:apple:j.doe", session: .persistent))
        try await old.connect()
        try await old.subscribe(to: topics.alerts(customer))
        await old.disconnect()
        let alert = RestockAlert(
            id: "apple-000000000000-1", store: apple, customer: customer, sku: try SKU("ipad"), quantity: 1, position: 1, message: "back", at: Date())
        let publisher = try MQTTClient(configuration: .init(broker: address, clientID: "t-\(UUID().uuidString.prefix(8))"))
        try await publisher.connect()
        try await publisher.publish(Array(alert.jsonData()), to: topics.alerts(customer), qos: .atLeastOnce)
        await publisher.disconnect()

        let client = StoreClient(connection: BrokerSettings(broker: address), topics: topics)
        var received: [String] = []
        for try await taken in try await client.alerts(for: customer, stopAfter: 1, within: 30) { received.append(taken.id) }
        #expect(received == [alert.id])
        let again = try MQTTClient(configuration: .init(broker: address, clientID: "restock:apple:j.doe", session: .persistent))
        #expect(try await again.connect() == false, "the old session is still on the broker")
        await again.disconnect()
    }
}
