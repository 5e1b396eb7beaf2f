import Deadlines
import Foundation
import Logging
import RestockPipeline
import ServiceLifecycle

/// Renews the data directory's lease (``StoreLease``) about every second for as long as the store runs — through its
/// drain too: it is the first stage, so the group stops it last. Once a newer owner holds the lease (this process was
/// frozen, or stalled, past the lease's lifetime, and a standby took over) it tells the lifecycle, which stops the store
/// without draining or saying offline, and ends with that ``StorageError`` (kind ``StorageError/Kind/leaseLost``).
/// A renewal that fails for a reason that may pass (a full disk, a lock) is tried again at the next one.
///
/// A store that took the lease over from a frozen process (a standby) also waits, meanwhile, for that process to end
/// and let the directory's lock go, and takes it (``StoreDatabase/adoptTheLockWhenFree()``): a second start is then
/// refused by the lock whatever its clock says (found by an outside trial: a start with its clock 5 s ahead took the
/// lease from the live standby-turned-owner), and a standby of its own takes over the moment it ends.
struct LeaseRenewal: Service {
    let storage: any StoreStorage
    let lifecycle: StoreLifecycle
    let interval: Duration
    /// The clock ``interval`` is measured by (``StoreTiming/clock``).
    let clock: ServiceClock
    let logger: Logger
    /// Told of each renewal, for `/readyz` (``StoreHealth/storageDetail``) and `restock_lease_age_seconds`.
    var health: StoreHealth? = nil
    /// Where `restock_lease_epoch` is recorded.
    var metrics: StoreMetrics? = nil

    /// When a failed renewal was last logged: once when they begin, then once a minute (an outside trial counted 32
    /// lines in one database outage), and a notice once renewals succeed again.
    private let failures = RepeatedFailures()

    var lease: any StoreOwnership { storage.ownership }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    if !storage.holdsLock { group.addTask { try await adoptTheLock() } }
                    group.addTask { try await renewals() }
                    // The first error ends the group, and cancels the wait for the lock (`waitForAll` would wait for it
                    // first: found by an outside trial, a store that lost its lease hung on the lock, ignoring SIGTERM).
                    while try await group.next() != nil {}
                }
            }
        } catch is CancellationError {
            // Graceful shutdown: the store releases the lease when its run ends.
        }
    }

    /// Renews every `interval`, on a queue of its own: never on Swift's cooperative pool, whose few threads a write
    /// waiting for the writer would hold (in a process running many stores — the tests — stores then took over a minute
    /// to come online), and not on the pipeline's queue either, where it waited behind a backlog being applied: a store
    /// working through a burst of 3,000 subscribes went 5 s without a renewal, and its standby took over a live store
    /// (found by an outside trial, 2 bursts in 3). The write itself waits only for the commit in progress.
    private func renewals() async throws {
        try await withTaskExecutorPreference(PipelineExecutor(label: "restock.lease")) {
            while true {
                try await clock.sleep(for: interval)
                try renew()
            }
        }
    }

    /// Takes the directory's lock once the process it was taken over from lets it go.
    private func adoptTheLock() async throws {
        do {
            guard try await storage.adoptTheLockWhenFree() else { return }
            logger.notice("the data directory's lock came free (the process this store took over from has ended): this store holds the data directory's lock now")
        } catch where error.kind == .leaseLost {
            lifecycle.loseLease(error)
            throw error
        } catch {
            // The lease's row could not be written now: the lock is held all the same; the next renewal says more.
            logger.warning("took the data directory's lock, but could not note it in the lease", metadata: [StoreLoggingKeys.error: "\(error)"])
        }
    }

    /// Renews once; throws only when the lease is lost.
    func renew() throws(StorageError) {
        let began = clock.now
        health?.leaseRenewalBegan()
        defer { reportSlow(since: began) }
        do {
            try lease.renew(at: Date())
            if let since = failures.succeeded(at: clock.now) {
                logger.notice("renewed the store's lease again, \(Int((clock.now - since).seconds)) s after its renewals began to fail")
            }
            health?.leaseRenewed(epoch: lease.heldEpoch)
            if let epoch = lease.heldEpoch { metrics?.leaseEpoch.record(epoch) }
        } catch where error.kind == .leaseLost {
            lifecycle.loseLease(error)
            throw error
        } catch {
            health?.leaseRenewalFailed(because: error.reason)
            if failures.failed(at: clock.now, reportEvery: .seconds(60)) {
                logger.warning(
                    "cannot renew the store's lease now; trying again every second (said again once a minute)",
                    metadata: [StoreLoggingKeys.error: "\(error)"])
            }
        }
    }

    /// Says, at warning level, a renewal that waited past ``StoreHealth/renewalPatience`` for its storage (the store was
    /// not ready meanwhile): while it waits, nothing else would tell the log.
    private func reportSlow(since began: ServiceClock.Instant) {
        let waited = clock.now - began
        guard waited >= StoreHealth.renewalPatience else { return }
        logger.warning("a renewal of the store's lease waited \((waited.seconds * 10).rounded(.down) / 10) s for its storage; the store was not ready meanwhile")
    }
}
