import Synchronization

/// When a graceful shutdown must stop publishing: unset while the store runs, set once when it begins to stop.
final class ShutdownDeadline: Sendable {
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)

    /// Starts the drain: publishing may go on for `duration` from now (the first call wins).
    func begin(drainingFor duration: Duration) {
        deadline.withLock { $0 = $0 ?? .now + duration }
    }

    /// Whether the store is stopping.
    var isStopping: Bool { deadline.withLock { $0 != nil } }

    /// Whether the drain's time is up.
    var hasPassed: Bool { deadline.withLock { $0.map { .now >= $0 } ?? false } }
}

/// A request to publish every retained topic again, from the connection's task to the processing task (which
/// alone reads the store, so that nothing newer is overwritten by an older version).
final class RepublishRequest: Sendable {
    private let requested = Atomic<Bool>(false)
    func request() { requested.store(true, ordering: .releasing) }
    /// Whether it was requested since the last call; clears it.
    func take() -> Bool { requested.exchange(false, ordering: .acquiringAndReleasing) }
}

/// Which instance took the store over, once one did.
final class TakeOver: Sendable {
    private let winner = Mutex<String?>(nil)
    func record(_ instance: String) { winner.withLock { $0 = $0 ?? instance } }
    var by: String? { winner.withLock { $0 } }
}
