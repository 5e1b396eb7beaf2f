import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle
import Synchronization

/// The store as an MQTT service (DESIGN §3, §5): it restores its state from SQLite, takes requests from
/// its topics, keeps the in-process ``Store`` a mirror of what customers asked for, publishes alerts and
/// the retained mirrors, inventory and status, and goes offline cleanly on graceful shutdown.
public final class StoreService: Service, Sendable {
    /// What the service needs to run.
    public struct Configuration: Sendable {
        public var connection: BrokerSettings
        public var store: StoreID
        public var prefix: String
        public var dataDirectory: URL
        public var alertsPerUnit: Int
        /// How long a graceful shutdown keeps publishing what the outbox holds before it stops.
        public var drainTimeout: Duration

        public init(
            connection: BrokerSettings, store: StoreID, prefix: String = RestockTopics.defaultPrefix,
            dataDirectory: URL, alertsPerUnit: Int = 0, drainTimeout: Duration = .seconds(5)
        ) {
            self.connection = connection
            self.store = store
            self.prefix = prefix
            self.dataDirectory = dataDirectory
            self.alertsPerUnit = alertsPerUnit
            self.drainTimeout = drainTimeout
        }
    }

    /// The MQTT client id of a store's persistent session: `restock:{store}` (``SessionClientIDs``).
    public static func clientID(for store: StoreID) -> String { SessionClientIDs.store(store) }

    public let configuration: Configuration
    /// The in-process store, the mirror of the broker's requests: restored from the data directory by ``run()``
    /// before the store says it is online. Read it; change it only through MQTT.
    public let store: Store
    public let topics: RestockTopics
    private let database: StoreDatabase
    private let logger: Logger
    private let clock: @Sendable () -> Date
    /// This store process, in its status: one live instance per store id on a broker.
    public let instance: String
    /// Whether this instance has published its claim on the store id (``claimTheStore()``).
    private let claimPublished = Atomic<Bool>(false)
    /// The process that used the data directory before this one (stopped or dead: this one holds the lock).
    private let previousInstance: String?

    /// Opens the data directory and restores the store.
    /// - Throws: ``RestockMQTTError/dataDirectoryInUse(_:)`` when another store process runs on it.
    public init(configuration: Configuration, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }) throws {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.topics = try RestockTopics(prefix: configuration.prefix, store: configuration.store)
        self.database = try StoreDatabase(directory: configuration.dataDirectory, store: configuration.store)
        self.instance = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        self.previousInstance = try database.replaceInstance(with: instance)
        self.store = try Store(id: configuration.store, alertsPerUnit: configuration.alertsPerUnit, clock: clock)
    }

    /// Reads the state saved in the data directory into ``store``, on the pipeline's thread.
    private func restore() async throws {
        try await withTaskExecutorPreference(database.executor) {
            let (snapshot, skipped) = try database.loadSnapshotReportingSkipped()
            for row in skipped.prefix(20) { logger.error("skipped a row of the database that holds no valid record: \(row)") }
            if skipped.count > 20 { logger.error("skipped \(skipped.count) rows of the database in all") }
            store.restore(snapshot)
            logger.info(
                "restored store \(configuration.store)",
                metadata: ["watches": "\(snapshot.watches.count)", "skus": "\(snapshot.inventory.count)"])
        }
    }

    /// Runs until graceful shutdown (SIGINT/SIGTERM through a `ServiceGroup`) or cancellation, then
    /// publishes its offline status and disconnects.
    ///
    /// On graceful shutdown it stops applying requests (a request that arrives later is kept, and applied at
    /// the next start), publishes what the outbox still holds for up to ``Configuration/drainTimeout``,
    /// recording each acknowledgement, logs how many messages are left for the next start, and goes offline.
    public func run() async throws {
        // The pipeline: journal (network thread) → apply and commit (SQLite thread) → publish, the stages
        // passing requests and committed messages in memory, each told by a wakeup when there is more.
        let (requests, requestArrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (outbox, outboxGrew) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let journaled = HandOff<JournaledRequest>(capacity: Self.handOffCapacity, wakeup: requestArrived)
        let committed = HandOff<CommittedPublication>(capacity: Self.handOffCapacity, wakeup: outboxGrew)
        let offline = StoreStatus.connectionLost(store: store.id, instance: instance)
        let onlineSince = clock()
        let takenOver = TakeOver()
        var mqtt = configuration.connection.configuration(
            clientID: Self.clientID(for: store.id), session: .persistent,
            will: MQTTWill(topic: try MQTTTopic(topics.status), payload: offline.payloadBytes(), retain: true))
        // Before it takes the session back after a loss, the store reads the retained status: if a newer instance is
        // live there, it took the session over, and this one stops without reconnecting — it never receives (or
        // journals) another request.
        mqtt.beforeReconnect = { [self] in await self.mayReconnect(onlineSince: onlineSince, takenOver: takenOver) }
        let client = try MQTTClient(
            configuration: mqtt,
            journal: RequestJournal(database: database, topics: topics, requests: journaled, logger: logger),
            logger: logger)

        let connectionEvents = client.connectionEvents()
        // SIGTERM and SIGINT end the service in every state, also while the broker is out of reach.
        do {
            try await cancelWhenGracefulShutdown {
                // The state is read while the store id is claimed and the session taken (the claim waits for the
                // broker anyway): requests that arrive meanwhile are journaled, and applied once it is online.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.restore() }
                    group.addTask {
                        try await self.connect(client)
                        // Requests are live messages: a retained one is never sent again at subscribe (v5), and any
                        // that still arrives keeps its retain flag, so that it is refused (under 3.1.1 only the ones
                        // sent at subscribe have it).
                        let requestOptions = MQTTSubscriptionOptions(retainHandling: .doNotSend, retainAsPublished: true)
                        for filter in self.topics.requestFilters {
                            try await client.subscribe(to: filter, qos: .atLeastOnce, options: requestOptions)
                        }
                    }
                    while try await group.next() != nil {}
                }
                try await client.publish(
                    self.onlineStatus(since: onlineSince).payloadBytes(), to: self.topics.status, qos: .atLeastOnce, retain: true)
            }
        } catch is CancellationError {
            await client.disconnect()
            if claimPublished.load(ordering: .acquiring) {
                // Stopped between its claim and going online: withdraw the claim, so that it does not hold off
                // another start for its 6 s (in a task of its own, which this cancellation does not reach).
                let reader = StoreClient(connection: configuration.connection, topics: topics), instance = instance
                await Task { _ = try? await withDeadline(2) { try await reader.withdrawClaim(of: instance) } }.value
            }
            logger.info("store \(store.id) stopped before it was online")
            return
        } catch {
            // The state could not be read, or the broker refused the store: nothing was applied.
            await client.disconnect()
            throw error
        }
        logger.info("store \(store.id) online", metadata: ["broker": "\(configuration.connection.broker)", "topics": "\(topics.root)/#"])

        let processor = try RequestProcessor(
            store: store, topics: topics, database: database, requests: journaled, committed: committed, logger: logger, clock: clock)
        let stopping = ShutdownDeadline()
        let publisher = OutboxPublisher(
            client: client, database: database, committed: committed, topics: topics, logger: logger, stopping: stopping)
        let republish = RepublishRequest()
        // Requests and alerts left from before a restart go first.
        requestArrived.yield()
        outboxGrew.yield()

        let drainTimeout = configuration.drainTimeout
        let failure = StageFailure()
        await withTaskGroup(of: Void.self) { group in
            // The applying and publishing stages run on the pipeline's own thread (``PipelineExecutor``): their
            // SQLite work never holds the cooperative pool, and a committed batch reaches the publisher on the
            // same thread.
            let executor = self.database.executor
            group.addTask(executorPreference: executor) {
                do {
                    try await cancelWhenGracefulShutdown {
                        for await _ in requests {
                            if republish.take() { try processor.republishRetained() }
                            try processor.drainInbox()
                        }
                    }
                } catch is CancellationError {
                } catch {
                    self.logger.critical("cannot apply requests: \(error); stopping after the outbox is drained")
                    failure.record("applying requests", error)
                }
                // No more requests are applied: what the outbox holds now is all there is to send before stopping.
                stopping.begin(drainingFor: drainTimeout)
                outboxGrew.yield()
                outboxGrew.finish()
                failure.stageEnded()
            }
            group.addTask(executorPreference: executor) {
                // The drain is bounded: once stopping has begun, the publisher gets the drain timeout and a grace
                // for the last acknowledgements, then it is cancelled (it records what was acknowledged), even with
                // the broker gone and acknowledgements that will never come.
                let publishing = Task(executorPreference: executor) { try await publisher.run(wakeups: outbox) }
                await withTaskGroup(of: Void.self) { watch in
                    watch.addTask { _ = try? await publishing.value }
                    watch.addTask {
                        guard await stopping.begun() else { return }
                        try? await Task.sleep(for: drainTimeout + .seconds(OutboxPublisher.acknowledgementGrace))
                        publishing.cancel()
                    }
                    await watch.next()
                    watch.cancelAll()
                }
                do {
                    try await publishing.value
                } catch is CancellationError {
                } catch {
                    self.logger.critical("cannot publish the outbox: \(error); stopping")
                    failure.record("publishing the outbox", error)
                    requestArrived.finish()  // the applying stage ends after its current batch
                }
                defer { failure.stageEnded() }
                let left = (try? self.database.queueLengths().outbox) ?? -1
                if left > 0 {
                    self.logger.notice("stopping with \(left) messages (alerts, mirrors, inventory) left in the outbox; the next start sends them")
                } else if stopping.isStopping {
                    self.logger.info("the outbox is empty: every message was acknowledged by the broker")
                }
            }
            group.addTask {
                // A restarted broker may have lost the retained status: say online again on every reconnect,
                // and resend what the outbox still holds. A broker without the store's session (restarted
                // without persistence) has lost the retained topics too: publish them all again.
                // All of it ends on shutdown, also a publish waiting for an acknowledgement from a broker that is gone.
                await cancelWhenGracefulShutdown {
                var first = true
                for await event in connectionEvents {
                    guard case .connected(let sessionPresent) = event else {
                        self.logger.warning("broker connection: \(event)")
                        continue
                    }
                    if !first, let winner = await self.newerLiveInstance(than: onlineSince) {
                        // The connection was lost because a newer instance took the session (libmosquitto does not
                        // pass on MQTT 5's "session taken over"): stop, rather than take it back.
                        takenOver.record(winner)
                        return
                    }
                    self.logger.info(first ? "connected to the broker" : "reconnected to the broker", metadata: ["session": "\(sessionPresent)"])
                    if !sessionPresent {
                        republish.request()
                        requestArrived.yield()
                    }
                    if !first {
                        try? await client.publish(
                            self.onlineStatus(since: onlineSince).payloadBytes(), to: self.topics.status, qos: .atLeastOnce, retain: true)
                    }
                    first = false
                    outboxGrew.yield()
                }
                }
            }
            group.addTask {
                // The heartbeat: a live store refreshes its retained status, so a status left by a store that is
                // gone is known to be stale.
                // All of it ends on shutdown, also a publish waiting for an acknowledgement from a broker that is gone.
                try? await cancelWhenGracefulShutdown {
                    while !Task.isCancelled {
                        try await Task.sleep(for: StoreStatus.heartbeatInterval)
                        try? await client.publish(
                            self.onlineStatus(since: onlineSince).payloadBytes(), to: self.topics.status, qos: .atLeastOnce, retain: true)
                    }
                }
            }
            while await group.next() != nil {
                // Taken over, or nothing left to apply and publish after a failure: the rest ends too.
                if takenOver.by != nil || (failure.error != nil && failure.pipelineEnded) { group.cancelAll() }
            }
        }

        if let winner = takenOver.by {
            // The winner's status stands: say nothing, apply nothing more.
            await client.disconnect()
            logger.critical("another instance of store \(store.id) took over; stopping", metadata: ["instance": "\(winner)"])
            throw RestockMQTTError.storeTakenOver(store: store.id.rawValue, instance: winner)
        }

        // Say offline even when this task was cancelled (a new task does not inherit the cancellation), but give
        // up after a second or two if the broker does not answer; with no connection at all the will says it.
        if client.isConnected {
            let goodbye = StoreStatus.stopped(store: store.id, at: clock(), instance: instance)
            let topic = topics.status
            _ = try? await withDeadline(2) { try await client.publish(goodbye.payloadBytes(), to: topic, qos: .atLeastOnce, retain: true) }
        }
        await client.disconnect()
        logger.info("store \(store.id) offline")
        if let error = failure.error { throw error }
    }

    /// How many journaled requests, and how many committed messages, wait in memory at most for the next stage;
    /// beyond that the next stage reads them from disk.
    static let handOffCapacity = 100_000

    /// This instance's online status, with a fresh heartbeat.
    private func onlineStatus(since: Date) -> StoreStatus {
        StoreStatus.online(store: store.id, since: since, instance: instance, heartbeatAt: clock())
    }

    /// Claims the store id before the store's session is taken, with a clean session of its own; throws
    /// ``RestockMQTTError/storeAlreadyRunning(store:instance:)`` when another instance has it.
    ///
    /// Refuses when the retained status says another instance is live (its heartbeat fresh), or the retained
    /// claim says another instance began to start less than ``StoreStatus/staleAfter`` ago. Otherwise publishes
    /// this instance's claim, lets ``claimSettle`` pass, and reads both again: of instances that started at the
    /// same moment, the one whose claim the broker kept (the last) goes on, and the others refuse. The process
    /// that last used this data directory is not another: it is gone, since this one holds the directory's lock.
    private func claimTheStore() async throws {
        let reader = StoreClient(connection: configuration.connection, topics: topics)
        let mine = StoreClaim(store: store.id, instance: instance, at: clock())
        let newest = try await reader.claimStore(
            mine, settle: Self.claimSettle, firstWait: .milliseconds(500),
            check: { seen in try self.refuseIfOwnedByAnother(seen) },
            published: { self.claimPublished.store(true, ordering: .releasing) })
        try refuseIfOwnedByAnother(newest)
        if let claim = newest.claim, claim.instance != instance, claim.instance != previousInstance {
            throw RestockMQTTError.storeAlreadyRunning(store: store.id.rawValue, instance: claim.instance)
        }
    }

    /// How long a start waits after its claim for a later claim of another instance.
    static let claimSettle = Duration.milliseconds(300)

    private func refuseIfOwnedByAnother(_ ownership: Ownership) throws {
        let now = clock()
        if let status = ownership.status, let other = status.instance, other != instance, other != previousInstance, status.isLive(at: now) {
            throw RestockMQTTError.storeAlreadyRunning(store: store.id.rawValue, instance: other)
        }
        if let claim = ownership.claim, claim.instance != instance, claim.instance != previousInstance, claim.isFresh(at: now),
            ownership.status?.instance != claim.instance || ownership.status?.isOnline == true
        {
            // Another instance began to start moments ago (and has not stopped since): it goes first.
            throw RestockMQTTError.storeAlreadyRunning(store: store.id.rawValue, instance: claim.instance)
        }
    }

    /// The instance, other than this one, whose retained status says it is live and started after `since`:
    /// one that has taken this store's session. `nil` when there is none, or the status cannot be read.
    private func newerLiveInstance(than since: Date) async -> String? {
        guard let status = try? await readStatus() else { return nil }
        return newerLiveInstance(in: status, than: since)
    }

    private func readStatus(waitingFor wait: Duration = .milliseconds(500)) async throws -> StoreStatus? {
        try await StoreClient(connection: configuration.connection, topics: topics).status(waitingFor: wait)
    }

    private func newerLiveInstance(in status: StoreStatus?, than since: Date) -> String? {
        guard let status, let other = status.instance, other != instance, status.isLive(at: clock()),
            let started = status.since.flatMap(Timestamp.date(from:)), started > since || (started == since && other > instance)
        else { return nil }
        return other
    }

    /// Whether to take the session back after a loss (``MQTTConfiguration/beforeReconnect``): only once the
    /// retained status has been read, and it shows no newer live instance. While the broker cannot be reached
    /// for the read (a network cut), it keeps asking: a reconnect that went ahead on an unread status could take
    /// the session back from a newer instance the moment the network returns.
    private func mayReconnect(onlineSince: Date, takenOver: TakeOver) async -> Bool {
        // Short waits: a broker that comes back is to be used within a second (a restarted broker without
        // persistence has no status to send, so the read waits only briefly for one).
        while !Task.isCancelled {
            do {
                let status = try await readStatus(waitingFor: .milliseconds(200))
                guard let winner = newerLiveInstance(in: status, than: onlineSince) else { return true }
                takenOver.record(winner)
                return false
            } catch {
                try? await Task.sleep(for: .milliseconds(Int.random(in: 100...200)))
            }
        }
        return false
    }

    /// Connects, retrying while the broker is unreachable (it may start after the store): the first retry after
    /// 100–250 ms, then doubling up to 2 s, each with jitter, so a broker that comes up is found within a second
    /// or two and many stores do not retry in step.
    /// Before the store's session is taken, each attempt claims the store id (``claimTheStore()``).
    private func connect(_ client: MQTTClient) async throws {
        var delay = 0.1
        while true {
            do {
                try await claimTheStore()
                try await client.connect()
                return
            } catch let error as MQTTError {
                // Bad credentials, or a user the broker does not let write the store's claim: retrying will not help.
                if case .connectionRefused = error { throw error }
                if case .publishRefused = error { throw error }
                let wait = delay * Double.random(in: 1...2.5)
                logger.warning("broker not reachable, retrying", metadata: ["error": "\(error)", "in": "\(Int(wait * 1000)) ms"])
                try await Task.sleep(for: .seconds(wait))
                delay = min(delay * 2, 0.8)
            }
        }
    }

    /// How many requests and messages wait in the queues, and how many watches are stored.
    public func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) { try database.queueLengths() }
}
