import Logging
import Synchronization

/// When the step of a stage that waits on the store's storage began (a journal's write and sync, a batch applied and
/// committed), so that readiness can tell a storage that answers nothing from one that is slow: a database frozen
/// (SIGSTOP) or cut off without a reset, or a filesystem that hangs, fails no call, and a store whose requests waited on
/// it answered 200 until the call's own timeout, 15 s on PostgreSQL (found by an outside trial). A step that waited past
/// ``patience`` is logged once it is answered.
package final class StorageWait: Sendable {
    /// How long a step may wait on the storage before the store is not ready. A step on a storage that answers takes
    /// milliseconds: a batch of ``RequestProcessor/batchSize`` requests, applied and committed, or one read's requests
    /// journaled and synced.
    package static let patience = Duration.seconds(2)

    /// What the stage does, as its log line says it ("applying requests").
    private let stage: String
    private let logger: Logger?
    /// When the step under way began; `nil` between steps.
    private let began = Mutex<ContinuousClock.Instant?>(nil)

    /// The wait of `stage`, whose late answers go to `logger` (none: not logged).
    package init(stage: String, logger: Logger?) {
        self.stage = stage
        self.logger = logger
    }

    /// Runs `body`, a step that waits on the storage, timed as one: a step inside another is part of it.
    package func during<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let start = ContinuousClock.now
        let outermost = began.withLock { began in
            guard began == nil else { return false }
            began = start
            return true
        }
        guard outermost else { return try body() }
        defer {
            began.withLock { $0 = nil }
            let waited = ContinuousClock.now - start
            if waited >= Self.patience {
                logger?.warning("\(stage) waited \(Self.tenths(waited)) s for the store's storage")
            }
        }
        return try body()
    }

    /// How long the step under way has waited, once that is past ``patience``; `nil` otherwise, and between steps.
    package var overdue: Duration? {
        guard let since = began.withLock({ $0 }) else { return nil }
        let waited = ContinuousClock.now - since
        return waited >= Self.patience ? waited : nil
    }

    /// `duration` in seconds, rounded down to a tenth: `3.2`.
    package static func tenths(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return ((Double(seconds) + Double(attoseconds) / 1e18) * 10).rounded(.down) / 10
    }
}
