import Foundation
import Deadlines
import Synchronization
import Mosquitto
import RestockCore
import RestockPipeline

/// Talks to a store over MQTT as a customer or an admin: sends requests and waits for the store's answer,
/// reads the retained state, and listens for alerts. The `restock` command line is a thin shell over it.
public final class StoreClient: Sendable {
    /// How to reach the broker.
    public let connection: BrokerSettings
    /// The store's topics.
    public let topics: RestockTopics
    /// How long a read of retained state waits for a first message before concluding there is none.
    public var retainedFirstMessageWait: Duration { .seconds(2) }
    /// How long a read of several retained topics waits after the last message before it ends.
    public var retainedQuietPeriod: Duration { .milliseconds(300) }

    /// Where its connections come from: libmosquitto, or (tests) a broker in memory.
    let connector: any BrokerConnector
    /// How long a subscription the broker refuses (a cluster electing leaders) is asked for again.
    package let subscriptionRetry: SubscriptionRetry
    /// Whether a request waits, within its `wait`, for a store the broker holds no status of: a broker restarted
    /// without its retained messages, a store not started yet. `false`: such a store is refused at once
    /// (``RestockMQTTError/unknownStore(store:)``), so that a mistyped id says so without waiting. On a cluster (a
    /// broker list) a missing status is always waited for.
    public let waitsForNewStore: Bool

    /// A client of the store whose topics these are, on the broker of `connection`.
    /// - Parameter waitsForNewStore: See ``waitsForNewStore``.
    public convenience init(connection: BrokerSettings, topics: RestockTopics, waitsForNewStore: Bool = false) {
        self.init(connection: connection, topics: topics, connector: MosquittoConnector(settings: connection), waitsForNewStore: waitsForNewStore)
    }

    /// A client whose connections come from `connector` (tests: a broker in memory).
    package init(
        connection: BrokerSettings, topics: RestockTopics, connector: any BrokerConnector, subscriptionRetry: SubscriptionRetry = .default,
        waitsForNewStore: Bool = false
    ) {
        self.waitsForNewStore = waitsForNewStore
        self.connector = connector
        self.subscriptionRetry = subscriptionRetry
        self.connection = connection
        self.topics = topics
    }

    // MARK: Requests

    /// Subscribes `customer` to `sku` and waits for the store's confirmation (its mirror) or refusal.
    ///
    /// First it makes sure the customer's listening session (``alerts(for:stopAfter:)``) exists, so that an
    /// alert raised before the customer's first listen — at once, for a SKU in stock — waits there for them.
    /// - Returns: The customer's watch list as the store confirmed it.
    /// - Throws: ``RestockMQTTError/storeOffline(store:)``, ``RestockMQTTError/refused(code:detail:)``,
    ///   ``RestockMQTTError/noAnswer(what:seconds:)``, or an ``MQTTError`` for the connection.
    /// - Parameter expiresAt: When the watch ends unalerted; `nil`: the store's watch lifetime from when it applies
    ///   the request.
    @discardableResult
    public func subscribe(
        _ customer: CustomerID, to sku: SKU, mode: WatchMode = .once, minQuantity: Int = 1, expiresAt: Date? = nil, wait: Double = 10
    ) async throws -> SubscriptionsMirror {
        let request = try SubscribeRequest(sku: sku, mode: mode, minQuantity: minQuantity, expiresAt: expiresAt)
        return try await self.request(
            topics.subscribe(customer), payload: request.payload,
            answer: topics.subscriptions(customer), errors: topics.errors(customer), wait: wait,
            first: { try await self.prepareListening(customer) })
    }

    /// Unsubscribes `customer` from `sku`, or from everything when `sku` is `nil`, and waits for the mirror.
    @discardableResult
    public func unsubscribe(_ customer: CustomerID, from sku: SKU?, wait: Double = 10) async throws -> SubscriptionsMirror {
        let request: UnsubscribeRequest = sku.map { .sku($0) } ?? .all
        return try await self.request(
            topics.unsubscribe(customer), payload: request.payload,
            answer: topics.subscriptions(customer), errors: topics.errors(customer), wait: wait)
    }

    /// Changes stock (admin) and waits for the store's new inventory record, or its refusal.
    @discardableResult
    public func changeStock(of sku: SKU, _ change: StockChange, wait: Double = 10) async throws -> InventoryRecord {
        let request = try StockRequest(sku: sku, change: change)
        return try await self.request(
            topics.adminStock, payload: request.payload,
            answer: topics.inventory(sku), errors: topics.adminErrors, wait: wait)
    }

    /// The first live message on `answers` that decodes as `Answer`, or the refusal of `topic` on `refusals`.
    static func firstAnswer<Answer: Decodable & Sendable>(
        _ type: Answer.Type, on answers: AsyncStream<MQTTMessage>, orRefusalOf topic: String,
        on refusals: AsyncStream<MQTTMessage>, accepting: @escaping @Sendable (Answer) -> Bool
    ) async throws -> Answer {
        try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask {
                for await message in answers where !message.retain {
                    if let decoded = try? JSONDecoder().decode(Answer.self, from: Data(message.payload)), accepting(decoded) { return decoded }
                }
                return nil
            }
            group.addTask {
                for await message in refusals where !message.retain {
                    if let report = try? JSONDecoder().decode(ErrorReport.self, from: Data(message.payload)), report.topic == topic {
                        throw RestockMQTTError.refused(code: report.error, detail: report.detail)
                    }
                }
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw MQTTError.notConnected
        }
    }

    // MARK: Retained state (the pull side)

    /// The store's retained status, or `nil` when it has never been online.
    public func status() async throws -> StoreStatus? {
        try await withClient { try await self.retained(StoreStatus.self, on: self.topics.status, using: $0).first }
    }

    /// The store's retained status, waiting at most `wait` after subscribing for it (the broker sends a retained
    /// message right after its SUBACK).
    func status(waitingFor wait: Duration) async throws -> StoreStatus? {
        try await withClient { try await self.retained(StoreStatus.self, on: self.topics.status, using: $0, firstWait: wait).first }
    }

    /// A customer's watch list as the store last published it; `nil` when it never had one.
    /// - Throws: ``RestockMQTTError/unknownStore(store:)`` when no store of this id was ever online on the broker.
    public func watching(_ customer: CustomerID) async throws -> SubscriptionsMirror? {
        try await withClient { client in
            try await self.requireKnown(client)
            return try await self.retained(SubscriptionsMirror.self, on: self.topics.subscriptions(customer), using: client).first
        }
    }

    /// The retained inventory, of one SKU or of all, sorted by SKU.
    /// - Throws: ``RestockMQTTError/unknownStore(store:)`` when no store of this id was ever online on the broker.
    public func inventory(_ sku: SKU? = nil) async throws -> [InventoryRecord] {
        let filter = sku.map(topics.inventory) ?? topics.inventoryFilter
        return try await withClient { client in
            try await self.requireKnown(client)
            return try await self.retained(InventoryRecord.self, on: filter, using: client)
        }.sorted { $0.sku < $1.sku }
    }

    /// Throws unless the store has a retained status (online or offline): its retained state means something.
    private func requireKnown(_ client: any BrokerConnection) async throws {
        guard try await retained(StoreStatus.self, on: topics.status, using: client).first != nil else {
            throw RestockMQTTError.unknownStore(store: topics.store.rawValue)
        }
    }

    // MARK: Alerts

    /// The MQTT client id of a customer's listening session: `P:{store}:{customer}` (`restock:{store}:{customer}` by default).
    public func listeningClientID(_ customer: CustomerID) -> String { SessionClientIDs.listening(customer, at: topics.store, prefix: topics.prefix) }

    /// Makes sure the customer's persistent listening session exists and is subscribed to their alerts,
    /// without taking anything it holds (see ``BrokerConnection/prepareSession(subscribingTo:)``).
    /// - Returns: Whether it existed already.
    @discardableResult
    public func prepareListening(_ customer: CustomerID) async throws -> Bool {
        let client = try connector.connection(clientID: listeningClientID(customer), session: .persistent)
        return try await listeningSession(of: customer) {
            try await connectingThroughElections { try await client.prepareSession(subscribingTo: topics.alerts(customer)) }
        }
    }

    /// Runs `connect`, saying whose session it is when the broker refuses it as not authorised.
    private func listeningSession<T>(of customer: CustomerID, _ connect: () async throws -> T) async throws -> T {
        do {
            return try await connect()
        } catch MQTTError.connectionRefused(let code, let reason) where code == 135 || code == 5 {  // v5 0x87, 3.1.1 5
            throw RestockMQTTError.listeningSessionRefused(
                customer: customer.rawValue, clientID: listeningClientID(customer), reason: "\(reason) (reason code \(code))")
        }
    }

    /// The customer's alerts as they arrive, de-duplicated by id, through a persistent session
    /// (`restock:{store}:{customer}`), so alerts raised while the customer is away arrive on return.
    ///
    /// The stream ends when the task reading it is cancelled, or after `count` alerts, or `seconds` after it
    /// began: then the client stops taking alerts, and the stream still yields every alert that arrived before
    /// that — an alert acknowledged to the broker is never dropped — and ends.
    public func alerts(
        for customer: CustomerID, stopAfter count: Int? = nil, within seconds: Double? = nil
    ) async throws -> AsyncThrowingStream<RestockAlert, any Error> {
        let carried = try await listeningSession(of: customer) { try await takeLegacySession(of: customer) }
        let client = try connector.connection(clientID: listeningClientID(customer), session: .persistent)
        let messages = try client.messages(matching: topics.alerts(customer))
        try await listeningSession(of: customer) { _ = try await connectingThroughElections { try await client.connect() } }
        try await client.subscribe(to: topics.alerts(customer), retrying: subscriptionRetry)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: RestockAlert.self)
        let reader = Task {
            var seen = Set<String>()
            var stopping = false
            func take(_ alert: RestockAlert) async {
                guard seen.insert(alert.id).inserted else { return }
                continuation.yield(alert)
                if let count, seen.count >= count, !stopping {
                    // Disconnecting ends `messages` after what it holds: the loop goes on through those.
                    stopping = true
                    await client.disconnect()
                }
            }
            // What a session of before issue 25 held comes first: it was raised earlier.
            for alert in carried { await take(alert) }
            for await message in messages {
                // Extend-safe: unknown fields are ignored; a payload that is not an alert is skipped.
                guard let alert = try? RestockAlert(jsonData: Data(message.payload)) else { continue }
                await take(alert)
            }
            continuation.finish()
        }
        let timer = Task {
            guard let seconds else { return }
            // The deadline helper bounds any value (infinity, NaN) to a sleep that cannot trap.
            _ = try? await withDeadline(seconds) { try await Task.sleep(for: .seconds(1e9)) }
            guard !Task.isCancelled else { return }
            await client.disconnect()
        }
        continuation.onTermination = { _ in
            timer.cancel()
            reader.cancel()
            Task { await client.disconnect() }
        }
        return stream
    }

    // MARK: Plumbing

    /// Runs `body` with a connected, clean-session client, and disconnects it after, whatever happens.
    func withClient<T: Sendable>(_ body: @Sendable (any BrokerConnection) async throws -> T) async throws -> T {
        let client = try connector.connection(clientID: SessionClientIDs.oneShot("restock-cli"))
        try await connectingThroughElections { try await client.connect() }
        do {
            let result = try await body(client)
            await client.disconnect()
            return result
        } catch {
            await client.disconnect()
            throw error
        }
    }

    /// The retained messages on `filter`: those that arrive before a quiet period passes with none. A
    /// filter without wildcards holds at most one, so its read ends as soon as that one arrives.
    func retained<T: Decodable & Sendable>(
        _ type: T.Type, on filter: String, using client: any BrokerConnection, firstWait: Duration? = nil
    ) async throws -> [T] {
        let single = !filter.contains("+") && !filter.contains("#")
        let messages = try client.messages(matching: filter)
        try await client.subscribe(to: filter, retrying: subscriptionRetry)
        let quiet = retainedQuietPeriod, firstWait = firstWait ?? retainedFirstMessageWait
        let collected = try await withThrowingTaskGroup(of: [T]?.self) { group in
            let found = Collected<T>()
            group.addTask {
                for await message in messages where message.retain {
                    if let value = try? JSONDecoder().decode(T.self, from: Data(message.payload)) {
                        found.append(value)
                        if single { return found.values }
                    }
                }
                return nil
            }
            group.addTask {
                // Retained messages follow the SUBACK; the read ends when none has come for a while
                // (longer before the first, which a busy broker may be slow to send).
                try await found.waitForQuiet(quiet, first: firstWait)
                return found.values
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            return []
        }
        try? await client.unsubscribe(from: filter)
        return collected
    }
}
