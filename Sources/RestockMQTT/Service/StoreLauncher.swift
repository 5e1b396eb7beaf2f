import RestockPipeline
import Foundation
import Logging
import ServiceLifecycle

/// Runs a store, live or as a standby (`restock serve --standby`): a standby waits, touching neither the broker nor
/// the database's state, until the live process has let the data directory go — it stopped or died, and the kernel
/// wakes the standby's wait on the directory's lock — or has not renewed the directory's lease for its lifetime
/// (frozen, or stalled), seen by the standby's own clock at each look (``StoreLease/renewalInterval``). It then takes
/// the lease (the epoch rises: the old process, resumed, writes nothing more) and runs the store, which takes over
/// its broker session with every watch, queued request and outbox message (docs/architecture.md, "Ownership: the
/// lease").
public struct StoreLauncher: Service {
    /// The store it runs.
    public let configuration: StoreService.Configuration
    /// Whether it waits as a standby until the live store process on the same data directory ends.
    public let standby: Bool
    /// Whether the store it runs is alive and takes requests (`/livez`, `/readyz`), also while it waits as a standby.
    public let health: StoreHealth
    private let logger: Logger

    /// How often a standby looks at the data directory's lease (the lock wakes it by itself).
    static let leaseLook = StoreLease.renewalInterval

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
        // A directory no store could use fails now, in one line, as a start does: never a standby that waits for ever.
        try StoreDatabase.prepare(directory, for: configuration.store)
        health.standby(on: directory)
        logger.info(
            "standby for store \(configuration.store): waiting for the live store process on \(directory.path) to stop, or to leave its lease unrenewed for \(StoreLease.lifetime.components.seconds) s")
        while true {
            let takeover: StoreService.Takeover
            do {
                takeover = try await cancelWhenGracefulShutdown { try await waitForTheOwnerToGo() }
            } catch is CancellationError {
                logger.info("standby stopped")
                health.stopped("stopped")
                return
            }
            let opened: StoreService?
            do {
                opened = try await openWaitingForLocks(takeover: takeover)
            } catch RestockMQTTError.dataDirectoryInUse {
                continue  // another standby was quicker
            } catch let error as StorageError where error.kind == .leaseLost {
                logger.notice("another standby took the data directory's lease first: \(error)")
                continue
            }
            guard let service = opened else { return }
            if takeover.lock != nil {
                logger.notice("the live store process stopped: this standby takes over")
            } else {
                logger.notice(
                    "the live store process (instance \(takeover.seen?.owner ?? "?")) has not renewed the data directory's lease for \(StoreLease.lifetime.components.seconds) s: this standby takes over (the old process, if it resumes, writes and publishes nothing more)")
            }
            try await service.run()
            return
        }
    }

    /// Waits until the live process has let the directory go (the directory's lock, taken here) or its lease lapsed
    /// (not renewed for ``StoreLease/lifetime`` by this process's clock). Ends with a `CancellationError` when cancelled.
    ///
    /// The lock may come to this standby while the lease's holder is a live store without it — a standby that took over
    /// from a frozen process, which then ended. The lock is that owner's to take (``StoreDatabase/adoptTheLockWhenFree()``):
    /// this standby lets it go at once, and waits on it again once the owner holds it, so that the owner's end wakes it
    /// (found by an outside trial: a second standby kept the lock, the owner never got it, and its end took 5–6 s to
    /// notice instead of half a second).
    private func waitForTheOwnerToGo() async throws -> StoreService.Takeover {
        let directory = configuration.dataDirectory
        // A look at the lease each second, and the lock whenever the kernel hands it over.
        let (looks, look) = AsyncStream.makeStream(of: DirectoryLock?.self)
        let decision: StoreService.Takeover? = await withTaskGroup(of: Void.self) { group in
            func waitForTheLock() {
                group.addTask {
                    guard let lock = await StoreDatabase.waitForLock(on: directory) else { return }
                    look.yield(lock)
                }
            }
            waitForTheLock()
            group.addTask {
                while (try? await Task.sleep(for: Self.leaseLook)) != nil { look.yield(nil) }
            }
            defer { group.cancelAll() }
            look.yield(nil)
            var watch = LeaseWatch(lifetime: StoreLease.lifetime)
            var lock: DirectoryLock?
            var waitingForTheLock = true
            for await got in looks {
                if let got {
                    lock = got
                    waitingForTheLock = false
                }
                let holder = StoreLease.holder(readingOnly: directory)
                let lapsed = holder.map { watch.lapsed($0, at: .now) } ?? false
                if let held = lock {
                    // The lock's last holder is gone. Unless the lease is held by a live process that never had the lock:
                    guard let holder, !holder.holdsLock, !holder.isReleased, !lapsed else { return StoreService.Takeover(lock: held, seen: holder) }
                    held.release()
                    lock = nil
                } else if let holder, lapsed {
                    return StoreService.Takeover(lock: nil, seen: holder)
                }
                // Wait on the lock again once nobody alive needs it more: the owner holds it, or there is no owner.
                if !waitingForTheLock, holder.map({ $0.holdsLock || $0.isReleased }) ?? true {
                    waitForTheLock()
                    waitingForTheLock = true
                }
            }
            return nil
        }
        guard let decision else { throw CancellationError() }
        return decision
    }

    /// Opens the store; while another process holds one of its files locked (`sqlite3` with a transaction open), waits
    /// and tries again every second, as a running store pauses (docs/operations.md, "Another process holding a file"),
    /// saying so once. Returns `nil` when stopped (graceful shutdown) meanwhile.
    private func openWaitingForLocks(takeover: StoreService.Takeover? = nil) async throws -> StoreService? {
        var waiting = false
        while true {
            do {
                let service = try StoreService(
                    configuration: configuration, logger: logger, connector: MosquittoConnector(settings: configuration.connection, logger: logger),
                    timing: .contract, health: health, takeover: takeover)
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
