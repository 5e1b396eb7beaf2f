import Foundation
import Logging
import RestockPipeline
import ServiceLifecycle

/// Renews the data directory's lease (``StoreLease``) about every second for as long as the store runs — through its
/// drain too: it is the first stage, so the group stops it last. Once a newer owner holds the lease (this process was
/// frozen, or stalled, past the lease's lifetime, and a standby took over) it tells the lifecycle, which stops the store
/// without draining or saying offline, and ends with that ``StorageError`` (kind ``StorageError/Kind/leaseLost``).
/// A renewal that fails for a reason that may pass (a full disk, a lock) is tried again at the next one.
struct LeaseRenewal: Service {
    let lease: StoreLease
    /// The pipeline's thread, where the renewal's write waits its turn with the commits: never on Swift's cooperative
    /// pool, whose few threads a write waiting for the writer would hold (in a process running many stores — the tests —
    /// stores then took over a minute to come online).
    let executor: PipelineExecutor
    let lifecycle: StoreLifecycle
    let interval: Duration
    let logger: Logger

    func run() async throws {
        do {
            try await withTaskExecutorPreference(executor) {
                try await cancelWhenGracefulShutdown {
                    while true {
                        try await Task.sleep(for: interval)
                        try renew()
                    }
                }
            }
        } catch is CancellationError {
            // Graceful shutdown: the store releases the lease when its run ends.
        }
    }

    /// Renews once; throws only when the lease is lost.
    func renew() throws(StorageError) {
        do {
            try lease.renew(at: Date())
        } catch where error.kind == .leaseLost {
            lifecycle.loseLease(error)
            throw error
        } catch {
            logger.warning("cannot renew the data directory's lease now; trying again", metadata: [StoreLoggingKeys.error: "\(error)"])
        }
    }
}
