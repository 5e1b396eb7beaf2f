import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle
import Synchronization

/// The store as an MQTT service (docs/architecture.md): it restores its state from its data directory, takes
/// requests from its topics, keeps the in-process ``Store`` a mirror of what customers asked for, publishes alerts
/// and the retained mirrors, inventory and status, and goes offline cleanly on graceful shutdown.
///
/// It talks to the broker over two connections: the store's persistent *session* (`restock:{store}`), which takes
/// the requests and journals each before acknowledging it, and a *publishing* connection of this instance
/// (`restock:{store}:@{instance}`), which publishes what the store commits and its status, carries its will, and
/// watches the status of other instances. So the session can be dropped and held — while the data directory cannot be
/// written, requests wait on the broker — without stopping alerts, and a request's acknowledgement never waits
/// behind the store's own publishing.
public final class StoreService: Service, Sendable {
    /// What the service needs to run.
    public struct Configuration: Sendable {
        /// How to reach the broker.
        public var connection: BrokerSettings
        /// The store id.
        public var store: StoreID
        /// The topics' prefix (`restock`).
        public var prefix: String
        /// Where the store keeps its two files (docs/operations.md).
        public var dataDirectory: URL
        /// Fair release: at most this many alerts per unit of stock that arrives; 0 is off.
        public var alertsPerUnit: Int
        /// How long a graceful shutdown keeps publishing what the outbox holds before it stops.
        public var drainTimeout: Duration
        /// The most SKUs one customer may watch (docs/contract.md, "Limits"): 1 through 1,000,000, default 100.
        public var maximumWatchesPerCustomer: Int
        /// How many requests a second one customer may send, sustained (`nil`: no limit); default 1.
        public var customerRequestRate: Double?
        /// How many requests one customer may send at once after a quiet spell; default 60.
        public var customerRequestBurst: Int
        /// How long a watch lasts when its subscribe names no `expiresAt` (`nil`: forever); default 180 days.
        public var watchLifetime: Duration?
        /// The MQTT 5 message expiry interval of the alerts the store publishes (`nil`: none); default 7 days.
        public var alertExpiry: Duration?
        /// The most watches the store holds, all customers together (`nil`: no limit); default ten million.
        public var maximumWatches: Int?

        /// A configuration; every limit has the contract's default.
        public init(
            connection: BrokerSettings, store: StoreID, prefix: String = RestockTopics.defaultPrefix,
            dataDirectory: URL, alertsPerUnit: Int = 0, drainTimeout: Duration = .seconds(5),
            maximumWatchesPerCustomer: Int = Store.defaultMaximumWatchesPerCustomer, customerRequestRate: Double? = 1,
            customerRequestBurst: Int = 60, watchLifetime: Duration? = Configuration.defaultWatchLifetime,
            alertExpiry: Duration? = Configuration.defaultAlertExpiry, maximumWatches: Int? = Store.defaultMaximumWatches
        ) {
            self.maximumWatches = maximumWatches
            self.watchLifetime = watchLifetime
            self.alertExpiry = alertExpiry
            self.connection = connection
            self.store = store
            self.prefix = prefix
            self.dataDirectory = dataDirectory
            self.alertsPerUnit = alertsPerUnit
            self.drainTimeout = drainTimeout
            self.maximumWatchesPerCustomer = maximumWatchesPerCustomer
            self.customerRequestRate = customerRequestRate
            self.customerRequestBurst = customerRequestBurst
        }

        /// Where the store keeps its state when not in the data directory (tests: memory).
        package var storage: (any StoreStorageBackend)?

        /// Where the store keeps its state: ``storage``, or else the data directory (SQLite).
        package var storageBackend: any StoreStorageBackend { storage ?? SQLiteStorage(directory: dataDirectory) }

        /// A watch's lifetime when its subscribe names no `expiresAt`: 180 days, as back-in-stock services keep a request.
        public static let defaultWatchLifetime = Duration.seconds(180 * 86_400)
        /// How long the broker keeps an undelivered alert: 7 days.
        public static let defaultAlertExpiry = Duration.seconds(7 * 86_400)

        /// Checks the durations against their ranges (the limits are checked where they are used).
        /// - Throws: ``RestockMQTTError/invalidSetting(setting:detail:)`` naming the first one out of range.
        func validate() throws(RestockMQTTError) {
            guard drainTimeout >= .zero, drainTimeout <= .seconds(3600) else {
                throw .invalidSetting(setting: "drainTimeout", detail: "from 0 to 3600 seconds, not \(drainTimeout)")
            }
            if let watchLifetime, watchLifetime <= .zero {
                throw .invalidSetting(setting: "watchLifetime", detail: "more than 0 seconds, or nil for watches that never end, not \(watchLifetime)")
            }
            if let alertExpiry, alertExpiry < .seconds(1) || alertExpiry > .seconds(Int64(UInt32.max)) {
                throw .invalidSetting(setting: "alertExpiry", detail: "from 1 to 4294967295 seconds, or nil for no expiry, not \(alertExpiry)")
            }
        }

        /// The rate limit as the applying stage takes it.
        /// - Throws: a one-line error when the rate or the burst is out of range.
        func rateLimit() throws -> CustomerRateLimiter.Configuration {
            guard let rate = customerRequestRate else { return .off }
            return try CustomerRateLimiter.Configuration(requestsPerSecond: rate, burst: customerRequestBurst)
        }
    }

    /// Installs the process's crash containment, once: signal handlers that mark the request being applied when a
    /// fault (a trap, a bad access, an abort) kills the store, so that the next start sets it aside after one more
    /// failure instead of many (docs/contract.md, "Durability and redelivery"). The executable that runs a store calls
    /// it; a library never installs process-wide handlers by itself.
    public static func installCrashContainment() { CrashContainment.install() }

    /// The MQTT client id of a store's persistent session: `P:{store}`, `restock:{store}` with the default topic prefix
    /// (``SessionClientIDs``).
    public static func clientID(for store: StoreID, prefix: String = RestockTopics.defaultPrefix) -> String {
        SessionClientIDs.store(store, prefix: prefix)
    }

    /// What the store was made with.
    public let configuration: Configuration
    /// Whether it is alive and takes requests (`/livez`, `/readyz`).
    public let health: StoreHealth
    /// Its metrics, through swift-metrics (``StoreMetric``).
    let metrics = StoreMetrics()
    /// The store's local observer list: what customers asked for through the broker, restored from the data directory
    /// by ``run()`` before the store says it is online, and each committed alert for in-process observers
    /// (docs/embedding.md). It reads and observes; customers and the admin change it through the broker.
    public let store: StoreView
    /// The in-process store the pipeline applies requests to; ``store`` is its public face.
    let core: Store
    /// The store's topics.
    public let topics: RestockTopics
    let storage: any StoreStorage
    let logger: Logger
    let clock: @Sendable () -> Date
    /// This store process, in its status: one live instance per store id.
    public let instance: String
    /// The process that used the data directory before this one: stopped or dead (this one holds the lock), or, after a
    /// takeover, the owner it took over from or one that took over from it and died before it recorded itself.
    private let previousInstance: String?
    /// The owner this store took the lease from while it may still live (frozen, or cut off), if it did.
    private let formerOwner: String?
    let rateLimit: CustomerRateLimiter.Configuration
    /// Where the connections come from: libmosquitto, or (tests) a broker in memory.
    let connector: any BrokerConnector
    let timing: StoreTiming

    /// Opens the data directory and restores the store.
    /// - Throws: ``RestockMQTTError/dataDirectoryInUse(_:)`` when another store process runs on it;
    ///   ``StorageError`` when a file of it cannot be used; ``RestockMQTTError/dataDirectoryDamaged(file:problem:remedy:)``
    ///   when its files do not belong together.
    public convenience init(
        configuration: Configuration, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }, health: StoreHealth = StoreHealth()
    ) throws {
        try self.init(
            configuration: configuration, logger: logger, clock: clock,
            connector: MosquittoConnector(settings: configuration.connection, logger: logger), timing: .contract, health: health)
    }

    /// A store whose connections come from `connector`, waiting by `timing`, its state in `storage` (by default SQLite
    /// in the configuration's data directory) — tests: a broker and a storage in memory, and intervals of milliseconds.
    package init(
        configuration: Configuration, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() },
        connector: any BrokerConnector, timing: StoreTiming, health: StoreHealth = StoreHealth(),
        takeover: StandbyTakeover? = nil, storage backend: (any StoreStorageBackend)? = nil
    ) throws {
        self.health = health
        self.connector = connector
        self.timing = timing
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.topics = try RestockTopics(prefix: configuration.prefix, store: configuration.store)
        try configuration.validate()
        self.rateLimit = try configuration.rateLimit()
        let instance = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        self.instance = instance
        // Every alert id carries this process's instance: a restored backup, removed data or a second store never gives
        // an id out twice (docs/contract.md, "Alert").
        let core = try Store(
            id: configuration.store, alertsPerUnit: configuration.alertsPerUnit,
            maximumWatchesPerCustomer: configuration.maximumWatchesPerCustomer, maximumWatches: configuration.maximumWatches,
            alertEpoch: instance, clock: clock)
        self.core = core
        let metrics = self.metrics
        self.store = StoreView(
            of: core,
            dropped: { count in
                metrics.observerAlertsDropped.increment(by: count)
                logger.warning(
                    "in-process observers are \(StoreView.maximumPendingAlerts) alerts behind: dropped \(count) alerts for them (the broker gets every one)")
            },
            failed: { error, alert in
                metrics.observerFailures.increment()
                logger.warning("an in-process observer failed", metadata: [StoreLoggingKeys.error: "\(error)", "alert": "\(alert.id)"])
            })
        let backend = backend ?? configuration.storageBackend
        self.storage = try backend.open(
            for: configuration.store,
            claim: takeover.map { .takeover(instance: instance, $0) } ?? .exclusive(instance: instance), now: Date())
        for migration in storage.migrations { logger.info("\(migration)") }
        for warning in storage.openingWarnings { logger.warning("\(warning)") }
        let formerOwner = takeover.flatMap { $0.ownerEnded ? nil : $0.seen?.owner }.flatMap { $0.isEmpty ? nil : $0 }
        self.formerOwner = formerOwner
        // Taking over from an owner that may still live, this one records itself only once the broker has closed the
        // publishing connections of the owners before it (closeTheFormerOwnersPublishers): if it dies first, the next
        // still finds the one it was taking over from (found by an outside trial: a standby killed in between left only
        // its own name, and the next closed its connection, not the frozen store's, whose heartbeat then held the start
        // off for 9 s).
        self.previousInstance = try formerOwner == nil ? storage.replaceInstance(with: instance) : storage.recordedInstance()
        let (store, maximum) = (self.store, configuration.maximumWatches)
        health.watching { (store.watchCount, maximum) }
        health.storing(in: backend.location, epoch: storage.ownership.heldEpoch, now: { [clock = timing.clock] in clock.now })
        metrics.recordStorage(engine: backend.engine)
        if let epoch = storage.ownership.heldEpoch { metrics.leaseEpoch.record(epoch) }
    }

    /// How many journaled requests, and how many committed messages, wait in memory at most for the next stage;
    /// beyond that the next stage reads them from disk.
    static let handOffCapacity = 100_000

    /// How many requests journaled but not yet applied make the store log that it is behind (``JournalLagWatch``).
    static let lagWarningThreshold: Int64 = 1_000

    /// Runs until graceful shutdown (SIGINT/SIGTERM through a `ServiceGroup`) or cancellation, then publishes its
    /// offline status, disconnects, and lets its data directory go, which is free for the next store once this
    /// returns. A service runs once: make a new one to start the store again.
    ///
    /// On graceful shutdown it closes its session (requests sent later wait on the broker for the next start),
    /// applies what it took, publishes what the outbox holds for up to ``Configuration/drainTimeout``, recording each
    /// acknowledgement, logs how many messages are left for the next start, and goes offline.
    /// - Throws: ``RestockMQTTError/storeAlreadyRunning(store:instance:)`` when another instance is live at start;
    ///   ``RestockMQTTError/storeTakenOver(store:instance:)`` when one took the store over later; the error of a
    ///   stage that failed for good; an ``MQTTError`` when the broker refuses the store.
    public func run() async throws {
        health.starting()
        // The data directory is free once run() returns: a program that embeds the store may start one on it at once.
        // The lease goes first (unless a newer owner holds it: then nothing is written).
        defer {
            storage.ownership.release()
            storage.releaseDirectory()
        }
        do {
            let wiring = try Wiring(service: self)
            try await withThrowingTaskGroup(of: Void.self) { watchers in
                // The publishing connection's view of the status and claim, for the whole run.
                watchers.addTask { await wiring.watchStatus(instance: self.instance) }
                defer { watchers.cancelAll() }
                guard try await start(wiring) else { return }
                health.running(wiring.lifecycle)
                try await runStages(wiring)
            }
        } catch {
            health.stopped("stopped: \(error)")
            throw error
        }
        health.stopped("stopped")
    }

    // MARK: Start

    /// Restores the state while it claims the store id, connects both connections and subscribes to the requests;
    /// then says online. Returns `false` when stopped (graceful shutdown) before it was online.
    private func start(_ wiring: Wiring) async throws -> Bool {
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { starting in
                    // The lease is renewed while the store starts too (a broker that is not there yet may keep it long),
                    // and by the stage ``LeaseRenewal`` once it runs. Lost meanwhile (this process was frozen, and a standby
                    // took over), the start ends with it at once: what it waits for may never come, its connections'
                    // write gate having closed them (found by an outside trial: such a store hung, and ignored SIGTERM).
                    starting.addTask { try await self.renewWhileStarting(wiring) }
                    starting.addTask { try await self.startSteps(wiring) }
                    try await starting.next()
                    starting.cancelAll()
                }
            }
        } catch is CancellationError {
            await wiring.session.disconnect()
            await withdrawClaim(wiring)
            await wiring.publisher.disconnect()
            logger.info("store \(store.id) stopped before it was online")
            return false
        } catch let error as StorageError where error.kind == .leaseLost {
            // A newer owner holds the data directory: nothing more goes out, not even the claim's withdrawal.
            await wiring.session.abandon()
            await wiring.publisher.abandon()
            logger.critical("a newer owner holds the data directory's lease; stopping without writing or publishing anything more: \(error)")
            throw error
        } catch {
            // The state could not be read, another instance is live, or the broker refused the store: nothing was applied.
            await wiring.session.disconnect()
            await withdrawClaim(wiring)
            await wiring.publisher.disconnect()
            throw error
        }
        let brokers = configuration.connection.brokers.map(\.description).joined(separator: ",")
        logger.info(
            "store \(store.id) online",
            metadata: [
                StoreLoggingKeys.broker: "\(brokers)", StoreLoggingKeys.topics: "\(topics.root)/#", StoreLoggingKeys.instance: "\(instance)",
                // Which release runs, in every start's log (found by an outside trial: only a migration said it).
                StoreLoggingKeys.version: "\(RestockVersion.current)",
            ])
        return true
    }

    /// Renews the lease every ``StoreTiming/leaseRenewal`` until cancelled; throws ``StorageError/Kind/leaseLost`` once a
    /// newer owner holds it.
    private func renewWhileStarting(_ wiring: Wiring) async throws {
        let renewal = LeaseRenewal(
            storage: storage, lifecycle: wiring.lifecycle, interval: timing.leaseRenewal, clock: timing.clock, logger: logger,
            health: health, metrics: metrics)
        // On a queue of its own, as the stage's: the restore holds the pipeline's queue for seconds with a million watches.
        try await withTaskExecutorPreference(PipelineExecutor(label: "restock.lease")) {
            while true {
                try await timing.clock.sleep(for: timing.leaseRenewal)
                try renewal.renew()
            }
        }
    }

    /// Restores the state while it claims the store id, connects both connections and subscribes to the requests; then
    /// says online.
    private func startSteps(_ wiring: Wiring) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.restore() }
            group.addTask {
                let began = self.timing.clock.now
                try await self.closeTheFormerOwnersPublishers()
                try await self.connectPublisher(wiring)
                self.logger.debug("starting: the publishing connection is up after \(self.timing.clock.now - began)")
                try await self.claimTheStore(wiring)
                self.logger.debug("starting: the store id is claimed after \(self.timing.clock.now - began)")
                try await self.connectSession(wiring)
                self.logger.debug("starting: the session is up after \(self.timing.clock.now - began)")
            }
            try await group.waitForAll()
        }
        try await reconcileRestoredState(wiring)
        // Renewed once the start is done; a standby that took the lease over meanwhile (a start stalled past its
        // lifetime) stops this one before it says online.
        if let lost = wiring.lifecycle.leaseLost { throw lost }
        try await storage.withExecutor { try self.storage.ownership.renew(at: Date()) }
        health.leaseRenewed(epoch: storage.ownership.heldEpoch)
        wiring.lifecycle.sessionConnected()
        wiring.liveness.wentOnline(own: instance)
        // At QoS 0, as every online status (Heartbeat): written now, never sent again after a reconnect. A connection
        // lost meanwhile has the heartbeat say it once it is back.
        try? await wiring.publisher.sendNow(wiring.heartbeat.onlineStatus().payloadBytes(), to: topics.status, retain: true)
            .acknowledged()
    }

    /// Reads the state saved in the data directory into ``store``, on the pipeline's thread.
    private func restore() async throws {
        try await storage.withExecutor {
            let (snapshot, skipped) = try storage.loadSnapshotReportingSkipped()
            for row in skipped.prefix(20) { logger.error("skipped a row of the database that holds no valid record: \(row)") }
            if skipped.count > 20 { logger.error("skipped \(skipped.count) rows of the database in all") }
            core.restore(snapshot)
            logger.info(
                "restored store \(configuration.store)",
                metadata: [StoreLoggingKeys.watches: "\(snapshot.watches.count)", StoreLoggingKeys.skus: "\(snapshot.inventory.count)"])
        }
    }

    /// After a takeover from an owner that may still live (frozen, or cut off: ``formerOwner``), connects once with that
    /// owner's publishing client id, before this store publishes anything: the broker closes the old connection (MQTT's
    /// client id takeover), so that what the old process still had in its socket's way when it froze — libmosquitto
    /// writes its queue without looking at the clock — reaches a connection the broker has closed, not the customers
    /// (found by testing: 55 and 135 alerts of 3,000 went out after the newer store's, when the freeze came while its
    /// network thread was writing). Its reconnect then asks its write gate, which refuses. So too for the instance
    /// recorded before this one, when it is another: an owner this one's former owner was taking over from when it died.
    /// Then it records this instance as the one using the storage.
    private func closeTheFormerOwnersPublishers() async throws {
        guard let formerOwner else { return }
        if FaultInjection.crashBeforeClosingTheFormerPublisher {
            FaultInjection.crash("crash-before-closing-the-former-publisher: the lease taken, the former owner's publisher open")
        }
        var closed: [String] = []
        for former in [formerOwner, previousInstance].compactMap({ $0 }) where !former.isEmpty && former != instance && !closed.contains(former) {
            let clientID = SessionClientIDs.publisher(of: store.id, instance: former, prefix: topics.prefix)
            let connection = try connector.connection(clientID: clientID, session: .clean)
            try await retryingWhileUnreachable { _ = try await connection.connect() }
            await connection.disconnect()
            logger.notice("closed the publishing connection of the former owner (instance \(former)) on the broker")
            closed.append(former)
        }
        // On a queue of its own: the restore holds the pipeline's, and the storage's call blocks.
        let (storage, instance) = (storage, instance)
        try await withTaskExecutorPreference(PipelineExecutor(label: "restock.instance")) {
            _ = try storage.replaceInstance(with: instance)
        }
    }

    /// Connects the publishing connection, retrying while the broker is unreachable (it may start after the store),
    /// and subscribes it to the status and the claim.
    private func connectPublisher(_ wiring: Wiring) async throws {
        try await retryingWhileUnreachable {
            if !wiring.publisher.isConnected {
                do {
                    try await wiring.publisher.connect()
                } catch MQTTError.misuse {
                    throw MQTTError.notConnected  // connected once, then lost: it reconnects by itself; tried again then
                }
            }
            wiring.liveness.connected()
            try await wiring.publisher.subscribe(to: self.topics.status, retrying: .default)
            try await wiring.publisher.subscribe(to: self.topics.claim, retrying: .default)
            wiring.liveness.subscribed()
            // The admin's questions, before the store says online: its client asks as soon as it is (on this connection's
            // clean session, a question sent before the subscription is lost; found in CI, all four of a test's).
            for filter in [self.topics.adminReport, self.topics.adminDeadLetters] {
                try await wiring.publisher.subscribe(to: filter, qos: .atLeastOnce, options: AdminQueries.subscriptionOptions, retrying: .default)
            }
        }
    }

    /// Takes the store's session and subscribes to the requests, publishing the claim again every
    /// ``StoreTiming/claimRenewal`` meanwhile (a store that starts slowly is still seen starting).
    private func connectSession(_ wiring: Wiring) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while true {
                    try await self.timing.clock.sleep(for: self.timing.claimRenewal)
                    try await self.publishClaim(wiring)
                }
            }
            defer { group.cancelAll() }
            try await retryingWhileUnreachable {
                if !wiring.session.isConnected {
                    do {
                        try await wiring.session.connect()
                    } catch MQTTError.misuse {
                        // Connected once, then lost before its subscriptions were made (the broker went away, or this process was
                        // frozen while another took the store): it reconnects by itself only once allowed, as the session watch
                        // does later — unless a newer instance took the store meanwhile, when this one stops.
                        try await self.refreshView(wiring)
                        if let winner = try await wiring.liveness.newerInstance(than: self.instance) {
                            throw RestockMQTTError.storeTakenOver(store: self.store.id.rawValue, instance: winner)
                        }
                        try await wiring.lifecycle.waitUntilTheJournalResumes(trying: self.storage, every: self.timing.retry)
                        wiring.session.allowReconnect()
                        throw MQTTError.notConnected  // tried again once it is back
                    }
                }
                // Requests are live messages: a retained one is never sent again at subscribe (v5), and any that still
                // arrives keeps its retain flag, so that it is refused (under 3.1.1 only the ones sent at subscribe have it).
                let options = MQTTSubscriptionOptions(retainHandling: .doNotSend, retainAsPublished: true)
                for filter in self.topics.requestFilters {
                    try await wiring.session.subscribe(to: filter, qos: .atLeastOnce, options: options, retrying: .default)
                }
            }
        }
    }

    /// Has the publishing connection read the retained status and claim again, so that ``Wiring/liveness`` holds the
    /// broker's current view, not one a stalled process kept: a subscription made again is answered with the retained
    /// messages, after everything the broker sent before it.
    func refreshView(_ wiring: Wiring) async throws {
        wiring.liveness.connected()
        try await wiring.publisher.subscribe(to: topics.status, retrying: .default)
        try await wiring.publisher.subscribe(to: topics.claim, retrying: .default)
        wiring.liveness.subscribed()
    }

    /// Runs `operation` until it succeeds, retrying after an error of a broker that is not reachable (yet): the
    /// first retry after 100–200 ms, then at most 800 ms apart (``MQTTReconnectPolicy``). A refusal is not retried.
    private func retryingWhileUnreachable(_ operation: () async throws -> Void) async throws {
        try await RestockMQTT.retryingWhileUnreachable(clock: timing.clock, logger: logger, operation)
    }

    // MARK: One store per store id

    /// Claims the store id before the store's session is taken (docs/contract.md, "One store per store id"); throws
    /// ``RestockMQTTError/storeAlreadyRunning(store:instance:)`` when another instance has it.
    ///
    /// Refuses when the retained status shows another instance live, or the retained claim another instance still
    /// starting — each judged by seeing its heartbeat or claim change here (``StoreLiveness``), never by comparing
    /// clocks; a heartbeat that reads fresh on this machine's clock counts as live at once, which errs only towards
    /// refusing. Otherwise publishes this instance's claim, lets ``StoreTiming/claimSettle`` pass, reads the claim and status
    /// again, and refuses if a later claim of another instance came meanwhile, or another showed a sign of life: of instances that started at the same moment, the one whose claim the broker
    /// kept (the last) goes on. The process that last used this data directory is not another: it is gone, since this
    /// one holds the directory's lock.
    private func claimTheStore(_ wiring: Wiring) async throws {
        let others: Set<String> = Set([instance, previousInstance].compactMap { $0 })
        if let other = try await wiring.liveness.liveInstance(otherThan: others, trustingClocks: true) {
            throw RestockMQTTError.storeAlreadyRunning(store: store.id.rawValue, instance: other)
        }
        if let other = try await wiring.liveness.startingInstance(otherThan: others, trustingClocks: true) {
            throw RestockMQTTError.storeAlreadyRunning(store: store.id.rawValue, instance: other)
        }
        try await publishClaim(wiring)
        try await timing.clock.sleep(for: timing.claimSettle)
        // Read the claim and the status again first: a process frozen during the wait (or a link that held its bytes) has
        // a newer claim still waiting in its socket, which it would read only after this check (found by an outside trial:
        // 1 start in 3 frozen there went online beside the newer store). The answer comes after all of it.
        try await refreshView(wiring)
        try await wiring.liveness.waitUntilCurrent()
        if let claim = wiring.liveness.claim, !others.contains(claim.instance) {
            throw RestockMQTTError.storeAlreadyRunning(store: store.id.rawValue, instance: claim.instance)
        }
        if let other = wiring.liveness.recentlyLiveInstance(otherThan: others) {
            throw RestockMQTTError.storeAlreadyRunning(store: store.id.rawValue, instance: other)
        }
    }

    /// Stopped (cleanly, or refused between its claim and going online): withdraws the claim, if the broker still holds this one's,
    /// so that it neither holds off another start nor tells a running store that lost its session that a newer instance
    /// started (``StoreLiveness/newerInstance(than:)``). In a task of its own, which a cancellation does not reach; the
    /// claim may take a moment to come back on this connection.
    func withdrawClaim(_ wiring: Wiring) async {
        guard wiring.claimPublished.isRaised else { return }
        let (publisher, liveness, claim, instance) = (wiring.publisher, wiring.liveness, topics.claim, instance)
        await Task {
            try? await waitUntil("this instance's claim", within: 0.5, pollEvery: .milliseconds(10)) {
                liveness.claim?.instance == instance
            }
            guard liveness.claim?.instance == instance,
                let publication = try? publisher.send([], to: claim, retain: true)
            else { return }
            // Up to 2 s for the broker's acknowledgement, without waiting on a publication that cannot be cancelled
            // (one queued on a connection that is away), so that a stop or a refusal is never held up by it.
            let acknowledged = Latch()
            Task { _ = try? await publication.acknowledged(); _ = acknowledged.open() }
            _ = await acknowledged.wait(timeout: .seconds(2))
        }.value
    }

    private func publishClaim(_ wiring: Wiring) async throws {
        let claim = StoreClaim(store: store.id, instance: instance, at: clock())
        let publication = try wiring.publisher.send(claim.payloadBytes(), to: topics.claim, retain: true)
        wiring.claimPublished.raise()
        try await publication.acknowledged()
    }

    /// How many requests and messages wait in the queues, and how many watches are stored.
    public func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) { try storage.queueLengths() }
}
