import RestockPipeline
import Foundation
import Logging
import ServiceLifecycle

/// Runs a store, live or as a standby (`restock serve --standby`): a standby waits, touching neither the broker nor
/// the store's state, until its storage says the live process is gone (``StoreStorageBackend/waitForTheOwnerToGo(of:)``):
/// it stopped or died — on SQLite the kernel wakes the standby's wait on the data directory's lock — or has not renewed
/// its lease for the lease's lifetime (frozen, or cut off). It then takes the lease (the epoch rises: the old process,
/// resumed, writes nothing more) and runs the store, which takes over its broker session with every watch, queued
/// request and outbox message (docs/architecture.md, "Ownership: the lease").
public struct StoreLauncher: Service {
    /// The store it runs.
    public let configuration: StoreService.Configuration
    /// Whether it waits as a standby until the live store process on the same data directory ends.
    public let standby: Bool
    /// Whether the store it runs is alive and takes requests (`/livez`, `/readyz`), also while it waits as a standby.
    public let health: StoreHealth
    private let logger: Logger
    /// How the store reaches the broker: libmosquitto (`nil`), or the tests' broker in memory.
    private let connector: (any BrokerConnector)?
    private let timing: StoreTiming

    /// A launcher of the store `configuration` describes, live or standby.
    public init(configuration: StoreService.Configuration, standby: Bool, logger: Logger, health: StoreHealth = StoreHealth()) {
        self.init(configuration: configuration, standby: standby, logger: logger, health: health, connector: nil, timing: .contract)
    }

    /// A launcher whose store reaches the broker through `connector` (by default libmosquitto), with `timing`.
    package init(
        configuration: StoreService.Configuration, standby: Bool, logger: Logger, health: StoreHealth, connector: (any BrokerConnector)?,
        timing: StoreTiming
    ) {
        self.health = health
        self.configuration = configuration
        self.standby = standby
        self.logger = logger
        self.connector = connector
        self.timing = timing
    }

    /// Runs the store (after waiting, as a standby) until graceful shutdown.
    public func run() async throws {
        guard standby else {
            guard try await readJournalWitness(), let service = try await openWaitingForLocks() else { return }
            try await service.run()
            return
        }
        let storage = configuration.storageBackend
        // A place no store could use fails now, in one line, as a start does: never a standby that waits for ever.
        try storage.prepareStandby(for: configuration.store)
        health.standby(on: storage.location)
        logger.info(
            "standby for store \(configuration.store): waiting for the live store process on \(storage.location) to stop, or to leave its lease unrenewed for \(LeaseHolder.lifetime.components.seconds) s")
        var lastWarning: (text: String, at: ContinuousClock.Instant)?
        while true {
            let takeover: StandbyTakeover
            do {
                takeover = try await cancelWhenGracefulShutdown {
                    try await self.readingTheWitnessMeanwhile { try await storage.waitForTheOwnerToGo(of: self.configuration.store, logger: self.logger) }
                }
            } catch is CancellationError {
                logger.info("standby stopped")
                health.stopped("stopped")
                return
            }
            let opened: StoreService?
            do {
                // How far the journal went, as the broker saw it last: a server that holds less is not taken over.
                opened = try await readJournalWitness() ? openWaitingForLocks(takeover: takeover) : nil
            } catch RestockMQTTError.dataDirectoryInUse {
                continue  // another standby was quicker
            } catch let error as StorageError where error.kind == .leaseLost {
                // The owner renewed it at the last moment (its storage came back), or another standby was quicker.
                logger.notice("the lease was renewed or taken before this standby could take it: \(error); it goes on waiting")
                // Its next look a renewal later, never at once (an outside trial saw 10 a second while two servers disagreed).
                try? await timing.clock.sleep(for: LeaseHolder.renewalInterval)
                continue
            } catch let error as JournalWitnessReader.Unreadable {
                // Until an operator clears it, or the store it belongs to writes its own: the standby keeps its cover.
                logger.error("cannot take the store over now: \(error); this standby goes on waiting")
                try? await timing.clock.sleep(for: LeaseHolder.renewalInterval * 5)
                continue
            } catch let error as StorageError where error.isRetriable {
                // A storage that cannot be written now (a read-only database, a full disk): the standby keeps its cover
                // and tries again, never exits (found by an outside trial: a standby exited on a read-only database).
                // The same reason once a minute: a server behind the broker's witness is met at every takeover.
                let said = "cannot take the store over now: \(error); this standby goes on waiting"
                let now = ContinuousClock.now
                if lastWarning.map({ $0.text != said || now - $0.at >= .seconds(60) }) ?? true {
                    logger.warning("\(said) (said again once a minute)")
                    lastWarning = (said, now)
                }
                try? await timing.clock.sleep(for: LeaseHolder.renewalInterval)
                continue
            }
            guard let service = opened else { return }
            if takeover.seen == nil {
                // A standby started where no store ever ran (a new place, or a mistyped one): it says so.
                logger.warning("no store has run on \(storage.location) yet: this standby starts as the live store, with no state")
            } else if takeover.ownerEnded {
                logger.notice("the live store process stopped: this standby takes over")
            } else if takeover.seen?.isReleased ?? true {
                logger.notice("the live store process let its lease go (it stopped): this standby takes over")
            } else {
                logger.notice(
                    "the live store process (instance \(takeover.seen?.owner ?? "?")) has not renewed its lease for \(LeaseHolder.lifetime.components.seconds) s: this standby takes over (the old process, if it resumes, writes and publishes nothing more)")
            }
            try await service.run()
            return
        }
    }

    /// How often a waiting standby reads the broker's journal witness again.
    static let witnessRereading = LeaseHolder.renewalInterval * 5

    /// Runs `wait` (a standby's, for the live store to go) while the broker's journal witness is read again every
    /// ``witnessRereading``, where the backend keeps one: the witness read before a takeover that was refused holds the
    /// standby's looks back from every server behind it, and an operator who clears it (after restoring the database on
    /// purpose) frees the standby within that time (found by an outside trial: cleared, it still held the standby back,
    /// and no store ran). A witness that cannot be read leaves the one read before.
    private func readingTheWitnessMeanwhile<T: Sendable>(_ wait: @escaping @Sendable () async throws -> T) async throws -> T {
        guard let witness = configuration.storageBackend.journalWitness else { return try await wait() }
        let reader = try witnessReader()
        let clock = timing.clock
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await wait() }
            group.addTask {
                while !Task.isCancelled {
                    try await clock.sleep(for: Self.witnessRereading)
                    _ = try? await reader.read(into: witness, quietly: true)
                }
                return nil
            }
            // The wait ends first (the other task never returns a value); the rereading is cancelled with it.
            while let next = try await group.next() {
                if let value = next {
                    group.cancelAll()
                    return value
                }
            }
            throw CancellationError()
        }
    }

    /// The reader of the broker's journal witness of this store (``JournalWitnessReader``).
    private func witnessReader() throws -> JournalWitnessReader {
        JournalWitnessReader(
            connector: connector ?? MosquittoConnector(settings: configuration.connection, logger: logger),
            topics: try RestockTopics(prefix: configuration.prefix, store: configuration.store), store: configuration.store,
            timing: timing, logger: logger)
    }

    /// Reads the broker's journal witness (``JournalWitnessReader``) where the backend keeps one (PostgreSQL), so that no
    /// database server whose journal goes less far is used: a former primary started again on its own. `false` when
    /// stopped (graceful shutdown) meanwhile.
    private func readJournalWitness() async throws -> Bool {
        guard let witness = configuration.storageBackend.journalWitness else { return true }
        let reader = try witnessReader()
        do {
            _ = try await cancelWhenGracefulShutdown { try await reader.read(into: witness) }
            return true
        } catch is CancellationError {
            return false
        }
    }

    /// Opens the store; while another process holds one of its files locked (`sqlite3` with a transaction open), waits
    /// and tries again every second, as a running store pauses (docs/operations.md, "Another process holding a file"),
    /// saying so once. Returns `nil` when stopped (graceful shutdown) meanwhile.
    private func openWaitingForLocks(takeover: StandbyTakeover? = nil) async throws -> StoreService? {
        var waiting = false
        while true {
            do {
                let service = try StoreService(
                    configuration: configuration, logger: logger,
                    connector: connector ?? MosquittoConnector(settings: configuration.connection, logger: logger), timing: timing, health: health,
                    takeover: takeover)
                if waiting { logger.notice("the lock is gone: the store starts") }
                return service
            } catch let error as StorageError where error.isLocked {
                if !waiting { logger.error("waiting to start: \(error); trying again every second until the other process lets it go") }
                waiting = true
            }
            do {
                try await cancelWhenGracefulShutdown { try await timing.clock.sleep(for: .seconds(1)) }
            } catch is CancellationError {
                return nil
            }
        }
    }
}

extension StoreLauncher: CustomStringConvertible {
    /// What the service lifecycle logs when it starts this service: the store and where it keeps its state, no settings.
    public var description: String {
        "StoreLauncher(store: \(configuration.store), storage: \(configuration.storageBackend.location)\(standby ? ", standby" : ""))"
    }
}
