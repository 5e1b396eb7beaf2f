import Foundation
import Logging
import Mosquitto
import RestockCore
import ServiceLifecycle

/// The store as an MQTT service (DESIGN §3, §5): it restores its state from SQLite, takes requests from
/// its topics, keeps the in-process ``Store`` a mirror of what customers asked for, publishes alerts and
/// the retained mirrors, inventory and status, and goes offline cleanly on graceful shutdown.
public final class StoreService: Service, Sendable {
    /// What the service needs to run.
    public struct Configuration: Sendable {
        public var connection: BrokerConnection
        public var store: StoreID
        public var prefix: String
        public var dataDirectory: URL
        public var alertsPerUnit: Int

        public init(
            connection: BrokerConnection, store: StoreID, prefix: String = RestockTopics.defaultPrefix,
            dataDirectory: URL, alertsPerUnit: Int = 0
        ) {
            self.connection = connection
            self.store = store
            self.prefix = prefix
            self.dataDirectory = dataDirectory
            self.alertsPerUnit = alertsPerUnit
        }
    }

    /// The MQTT client id of a store: `restock-store-{store}`.
    public static func clientID(for store: StoreID) -> String { "restock-store-\(store)" }

    public let configuration: Configuration
    /// The in-process store, the mirror of the broker's requests. Read it; change it only through MQTT.
    public let store: Store
    public let topics: RestockTopics
    private let database: StoreDatabase
    private let logger: Logger
    private let clock: @Sendable () -> Date

    /// Opens the data directory and restores the store.
    /// - Throws: ``RestockMQTTError/dataDirectoryInUse(_:)`` when another store process runs on it.
    public init(configuration: Configuration, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }) throws {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.topics = try RestockTopics(prefix: configuration.prefix, store: configuration.store)
        self.database = try StoreDatabase(directory: configuration.dataDirectory, store: configuration.store)
        let snapshot = try database.loadSnapshot()
        self.store = try Store(id: configuration.store, alertsPerUnit: configuration.alertsPerUnit, restoring: snapshot, clock: clock)
        logger.info(
            "restored store \(configuration.store)",
            metadata: ["watches": "\(snapshot.watches.count)", "skus": "\(snapshot.inventory.count)"])
    }

    /// Runs until graceful shutdown (SIGINT/SIGTERM through a `ServiceGroup`) or cancellation, then
    /// publishes its offline status and disconnects.
    public func run() async throws {
        let (requests, requestArrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (outbox, outboxGrew) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let offline = StoreStatus(store: store.id, online: false, since: clock())
        let client = try MQTTClient(
            configuration: configuration.connection.configuration(
                clientID: Self.clientID(for: store.id), session: .persistent,
                will: MQTTWill(topic: try MQTTTopic(topics.status), payload: offline.payloadBytes(), retain: true)),
            journal: RequestJournal(database: database, wakeup: requestArrived, logger: logger))

        let connectionEvents = client.connectionEvents()
        try await connect(client)
        // Requests are live messages: a retained one is never sent again at subscribe (v5), and any that still
        // arrives keeps its retain flag, so that it is refused (under 3.1.1 only the ones sent at subscribe have it).
        let requestOptions = MQTTSubscriptionOptions(retainHandling: .doNotSend, retainAsPublished: true)
        for filter in topics.requestFilters { try await client.subscribe(to: filter, qos: .atLeastOnce, options: requestOptions) }
        let online = StoreStatus(store: store.id, online: true, since: clock())
        try await client.publish(online.payloadBytes(), to: topics.status, qos: .atLeastOnce, retain: true)
        logger.info("store \(store.id) online", metadata: ["broker": "\(configuration.connection.broker)", "topics": "\(topics.root)/#"])

        let processor = RequestProcessor(store: store, topics: topics, database: database, logger: logger, clock: clock)
        let publisher = OutboxPublisher(client: client, database: database, topics: topics, logger: logger)
        // Requests and alerts left from before a restart go first.
        requestArrived.yield()
        outboxGrew.yield()

        // On graceful shutdown every loop is cancelled at once: what is left in the inbox and the outbox is
        // on disk, and the next start takes it up.
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await cancelWhenGracefulShutdown {
                        for await _ in requests {
                            if try processor.drainInbox() > 0 { outboxGrew.yield() }
                        }
                    }
                } catch is CancellationError {
                } catch {
                    self.logger.critical("cannot apply requests: \(error)")
                }
            }
            group.addTask {
                do {
                    try await cancelWhenGracefulShutdown { try await publisher.run(wakeups: outbox) }
                } catch is CancellationError {
                } catch {
                    self.logger.error("outbox stopped: \(error)")
                }
            }
            group.addTask {
                // A restarted broker may have lost the retained status: say online again on every reconnect,
                // and resend what the outbox still holds.
                for await event in connectionEvents.cancelOnGracefulShutdown() {
                    guard case .connected = event else {
                        self.logger.warning("broker connection: \(event)")
                        continue
                    }
                    self.logger.info("reconnected to the broker")
                    let status = StoreStatus(store: self.store.id, online: true, since: self.clock())
                    try? await client.publish(status.payloadBytes(), to: self.topics.status, qos: .atLeastOnce, retain: true)
                    outboxGrew.yield()
                }
            }
            await group.next()
            group.cancelAll()
        }

        // Say offline even when this task was cancelled (a new task does not inherit the cancellation),
        // but give up after a few seconds if the broker is gone.
        let goodbye = StoreStatus(store: store.id, online: false, since: clock())
        let topic = topics.status
        let publishing = Task { try await client.publish(goodbye.payloadBytes(), to: topic, qos: .atLeastOnce, retain: true) }
        let timer = Task {
            try await Task.sleep(for: .seconds(5))
            publishing.cancel()
        }
        _ = try? await publishing.value
        timer.cancel()
        await client.disconnect()
        logger.info("store \(store.id) offline")
    }

    /// Connects, retrying with backoff while the broker is unreachable (it may start after the store).
    private func connect(_ client: MQTTClient) async throws {
        var delay = Duration.milliseconds(250)
        while true {
            do {
                try await client.connect()
                return
            } catch let error as MQTTError {
                if case .connectionRefused = error { throw error }  // bad credentials: retrying will not help
                logger.warning("broker not reachable, retrying", metadata: ["error": "\(error)", "in": "\(delay)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(10))
            }
        }
    }

    /// How many requests and messages wait in the queues, and how many watches are stored.
    public func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) { try database.queueLengths() }
}
