import Deadlines
import Logging
import RestockPipeline
import ServiceLifecycle
import Synchronization

/// The applying stage of the store's pipeline, on the pipeline's own thread (``PipelineExecutor``): whenever the
/// journal passes requests on, ``RequestProcessor`` applies them to the store and commits each batch; the
/// committed messages go on to the publisher in memory.
///
/// A commit that fails because the store's state cannot be written for now (a full disk, a lock held by another
/// process) pauses the stage: it tries the same commit again every second, and goes on once it succeeds
/// (docs/operations.md, "A full disk"). Any other failure ends the stage with its error, and the store stops after
/// publishing what is committed. On graceful shutdown it ends after the batch it is applying.
struct ApplyStage: Service {
    let processor: RequestProcessor
    let storage: any StoreStorage
    /// Woken when the journal has passed requests on (or the session watch asks for a republish).
    let wakeups: AsyncStream<Void>
    let republishRequested: Flag
    let lifecycle: StoreLifecycle
    let logger: Logger

    /// How long a paused stage waits before it tries again.
    let retryInterval: Duration
    /// The clock ``retryInterval`` is measured by (``StoreTiming/clock``).
    let clock: ServiceClock

    func run() async throws {
        try await storage.withExecutor {
            do {
                try await cancelWhenGracefulShutdown {
                    for await _ in wakeups { try await applyWaiting() }
                }
            } catch is CancellationError {
            } catch let error as StoreStageError {
                throw error
            } catch {
                logger.critical("cannot apply requests: \(error); stopping after the outbox is drained")
                let failure = StoreStageError(stage: StoreLifecycle.Stage.applying.rawValue, cause: error)
                lifecycle.fail(failure)
                throw failure
            }
        }
    }

    /// Applies every request waiting (and republishes the retained topics if asked), pausing while the store's
    /// state cannot be written.
    private func applyWaiting() async throws {
        while true {
            let republish = republishRequested.take()
            do {
                if republish { try processor.republishRetained() }
                try processor.drainInbox()
                lifecycle.resume(.applying)
                return
            } catch let error as StorageError where error.isRetriable {
                if republish { republishRequested.raise() }
                lifecycle.pause(.applying, because: error)
                try await clock.sleep(for: retryInterval)
            }
        }
    }
}
