import RestockPipeline
import Foundation
import Logging
import ServiceLifecycle

/// Runs a store, live or as a standby (`restock serve --standby`): a standby waits, touching neither the
/// broker nor the database, until no process holds the data directory — the live one has stopped or died —
/// then opens it and runs the store, which takes over its broker session with every watch, queued request
/// and outbox message.
public struct StoreLauncher: Service {
    /// The store it runs.
    public let configuration: StoreService.Configuration
    /// Whether it waits as a standby until the live store process on the same data directory ends.
    public let standby: Bool
    /// Whether the store it runs is alive and takes requests (`/livez`, `/readyz`), also while it waits as a standby.
    public let health: StoreHealth
    private let logger: Logger

    /// How often a standby looks at the data directory's lock.
    static let standbyPoll = Duration.milliseconds(50)

    /// A launcher of the store `configuration` describes, live or standby.
    public init(configuration: StoreService.Configuration, standby: Bool, logger: Logger, health: StoreHealth = StoreHealth()) {
        self.health = health
        self.configuration = configuration
        self.standby = standby
        self.logger = logger
    }

    /// Runs the store (after waiting, as a standby) until graceful shutdown.
    public func run() async throws {
        guard standby else {
            guard let service = try await openWaitingForLocks() else { return }
            try await service.run()
            return
        }
        let directory = configuration.dataDirectory
        health.standby(on: directory)
        logger.info("standby for store \(configuration.store): waiting for the live store process on \(directory.path) to stop")
        while true {
            do {
                try await cancelWhenGracefulShutdown {
                    while StoreDatabase.isInUse(directory) { try await Task.sleep(for: Self.standbyPoll) }
                }
            } catch is CancellationError {
                logger.info("standby stopped")
                health.stopped("stopped")
                return
            }
            let opened: StoreService?
            do {
                opened = try await openWaitingForLocks()
            } catch RestockMQTTError.dataDirectoryInUse {
                continue  // another standby was quicker
            }
            guard let service = opened else { return }
            logger.notice("the live store process stopped: this standby takes over")
            try await service.run()
            return
        }
    }

    /// Opens the store; while another process holds one of its files locked (`sqlite3` with a transaction open), waits
    /// and tries again every second, as a running store pauses (docs/operations.md, "Another process holding a file"),
    /// saying so once. Returns `nil` when stopped (graceful shutdown) meanwhile.
    private func openWaitingForLocks() async throws -> StoreService? {
        var waiting = false
        while true {
            do {
                let service = try StoreService(configuration: configuration, logger: logger, health: health)
                if waiting { logger.notice("the lock is gone: the store starts") }
                return service
            } catch let error as StorageError where error.isLocked {
                if !waiting { logger.error("waiting to start: \(error); trying again every second until the other process lets it go") }
                waiting = true
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            } catch is CancellationError {
                return nil
            }
        }
    }
}

extension StoreLauncher: CustomStringConvertible {
    /// What the service lifecycle logs when it starts this service: the store and where it keeps its state, no settings.
    public var description: String {
        "StoreLauncher(store: \(configuration.store), data: \(configuration.dataDirectory.path)\(standby ? ", standby" : ""))"
    }
}
