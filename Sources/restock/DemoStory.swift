import Foundation
import LocalBroker
import Logging
import Mosquitto
import RestockCore
import RestockMQTT
import Synchronization
import Deadlines

/// The whole story in one run (`restock demo`): a store, three customers, two restocks, an unsubscribe,
/// told step by step in human words, with each alert shown as it arrives.
struct DemoStory: Sendable {
    /// What the demo found: alerts expected, delivered, and whether each customer got exactly its own.
    struct Summary: Sendable {
        var expected: [String: Int]
        var delivered: [String: Int]
        var succeeded: Bool { expected == delivered }
    }

    let connection: BrokerSettings
    let topics: RestockTopics
    /// Whether it removes what it leaves on the broker when it ends: retained topics and customers' sessions.
    let cleansUp: Bool
    private let say: @Sendable (String) -> Void

    init(
        connection: BrokerSettings, topics: RestockTopics, cleansUp: Bool = false, say: @escaping @Sendable (String) -> Void
    ) {
        self.connection = connection
        self.topics = topics
        self.cleansUp = cleansUp
        self.say = say
    }

    /// Runs the story against the broker of `connection`, with a store service of its own.
    func run() async throws -> Summary {
        let sku = try SKU("iphone-15")
        let (alice, bob, carol) = (try CustomerID("alice"), try CustomerID("bob"), try CustomerID("carol"))
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("restock-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let serving = try await startStore(in: dataDirectory)
        defer { serving.cancel() }
        let client = StoreClient(connection: connection, topics: topics)
        let (delivered, listeners) = try await listen(client, for: [alice, bob, carol])
        defer { for listener in listeners { listener.cancel() } }

        say("▶ alice and bob ask to hear each time \(sku) is back; carol once, when at least 2 are in")
        try await client.changeStock(of: sku, .set(0))
        for (customer, mode, minimum) in [(alice, WatchMode.every, 1), (bob, .every, 1), (carol, .once, 2)] {
            let mirror = try await client.subscribe(customer, to: sku, mode: mode, minQuantity: minimum)
            let position = mirror.watching.first { $0.sku == sku.rawValue }?.position ?? 0
            say("  ✓ \(customer) is watching \(sku), place \(position) in line (\(mode), at least \(minimum))")
        }

        say("▶ 3 × \(sku) arrive at the store: all three are alerted, in signup order")
        try await client.changeStock(of: sku, .add(3))
        try await waitForDeliveries(delivered, total: 3)

        say("▶ bob has his phone and unsubscribes")
        try await client.unsubscribe(bob, from: sku)
        say("  ✓ bob no longer watches \(sku)")

        say("▶ \(sku) sells out, then 5 more arrive: only alice is still watching")
        try await client.changeStock(of: sku, .set(0))
        try await client.changeStock(of: sku, .add(5))
        try await waitForDeliveries(delivered, total: 4)

        let summary = try await summarize(delivered, client: client, sku: sku)
        if cleansUp {
            for listener in listeners { listener.cancel() }
            serving.cancel()
            _ = try? await serving.value
            try await cleanUp(customers: [alice, bob, carol], skus: [sku])
            say("▶ Removed the demo store's retained topics and its customers' sessions from the broker")
        }
        return summary
    }

    /// Starts the demo's own store service and waits until it is online: this demo's, not another live store of the
    /// same id (`--store` naming a real one makes the demo's refuse to start, and the demo stops with that error
    /// instead of talking to the real store).
    private func startStore(in dataDirectory: URL) async throws -> Task<Void, any Error> {
        var logger = Logger(label: "restock.demo.store")
        logger.logLevel = .warning
        let service = try StoreService(
            configuration: .init(connection: connection, store: topics.store, prefix: topics.prefix, dataDirectory: dataDirectory),
            logger: logger)
        let failure = Mutex<(any Error)?>(nil)
        let serving = Task {
            do {
                try await service.run()
            } catch {
                failure.withLock { $0 = error }
                throw error
            }
        }
        let client = StoreClient(connection: connection, topics: topics)
        let ownInstance = service.instance
        do {
            try await waitUntil("store \(topics.store) to come online", within: 30) {
                if let error = failure.withLock({ $0 }) { throw error }
                let status = try? await client.status()
                return status?.isOnline == true && status?.instance == ownInstance
            }
        } catch {
            serving.cancel()
            throw error
        }
        say("▶ Store \"\(topics.store)\" is online, keeping its state in \(dataDirectory.path)")
        return serving
    }

    /// Each customer listens on its own topic, through a persistent session; every alert is printed and counted.
    private func listen(_ client: StoreClient, for customers: [CustomerID]) async throws -> (DeliveryTally, [Task<Void, any Error>]) {
        let delivered = DeliveryTally()
        var listeners: [Task<Void, any Error>] = []
        for customer in customers {
            let alerts = try await client.alerts(for: customer)
            listeners.append(
                Task { [say] in
                    for try await alert in alerts {
                        delivered.count(alert.customer.rawValue)
                        say("  🔔 \(alert.customer) got an alert: \(alert.message) [position \(alert.position)]")
                    }
                })
        }
        return (delivered, listeners)
    }

    /// Prints and returns what arrived against what the story expects.
    private func summarize(_ delivered: DeliveryTally, client: StoreClient, sku: SKU) async throws -> Summary {
        let inventory = try await client.inventory(sku).first?.quantity ?? 0
        let expected = ["alice": 2, "bob": 1, "carol": 1]
        let summary = Summary(expected: expected, delivered: delivered.byCustomer)
        say("")
        say("Summary: 3 customers, 2 restocks, \(inventory) × \(sku) on hand.")
        for name in expected.keys.sorted() {
            say("  \(name): \(summary.delivered[name, default: 0]) of \(expected[name]!) expected alert(s)")
        }
        say(summary.succeeded ? "Every alert arrived, and none twice." : "Some alerts did not arrive as expected.")
        return summary
    }

    /// Clears the retained topics of the demo's store and ends its own and its customers' persistent sessions.
    private func cleanUp(customers: [CustomerID], skus: [SKU]) async throws {
        let client = try MQTTClient(
            configuration: connection.configuration(clientID: SessionClientIDs.oneShot("restock-demo-cleanup"), session: .clean))
        try await client.connect()
        let retained = [topics.status, topics.claim] + skus.map(topics.inventory) + customers.map(topics.subscriptions)
        for topic in retained { try await client.publish([], to: topic, qos: .atLeastOnce, retain: true) }
        await client.disconnect()
        let store = StoreClient(connection: connection, topics: topics)
        // A clean connection with a session's client id ends the session: the listeners' and the store's own.
        let sessions = customers.map(store.listeningClientID) + [SessionClientIDs.store(topics.store, prefix: topics.prefix)]
        for clientID in sessions {
            let session = try MQTTClient(configuration: connection.configuration(clientID: clientID, session: .clean))
            try await session.connect()
            await session.disconnect()
        }
    }

    private func waitForDeliveries(_ delivered: DeliveryTally, total: Int) async throws {
        try await waitUntil("\(total) alerts in all", within: 30) { delivered.total >= total }
    }
}

/// Alerts delivered, per customer, counted from the listeners' tasks.
private final class DeliveryTally: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    func count(_ customer: String) { counts.withLock { $0[customer, default: 0] += 1 } }
    var byCustomer: [String: Int] { counts.withLock { $0 } }
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
}
