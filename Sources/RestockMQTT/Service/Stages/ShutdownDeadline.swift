import Deadlines
import Synchronization

/// When the publisher's drain must stop: unset while the store runs, set once when it begins to stop.
final class ShutdownDeadline: Sendable {
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)
    private let started = Latch()

    /// Starts the drain: publishing may go on for `duration` from now (the first call wins).
    func begin(drainingFor duration: Duration) {
        deadline.withLock { $0 = $0 ?? .now + duration }
        started.open()
    }

    /// Returns `true` once the drain has begun, or `false` when the waiting task is cancelled first.
    func begun() async -> Bool { await started.wait() }

    /// Opened when the drain begins.
    var beginning: Latch { started }

    /// Whether the store is stopping.
    var isStopping: Bool { deadline.withLock { $0 != nil } }

    /// Whether the drain's time is up.
    var hasPassed: Bool { deadline.withLock { $0.map { .now >= $0 } ?? false } }
}
