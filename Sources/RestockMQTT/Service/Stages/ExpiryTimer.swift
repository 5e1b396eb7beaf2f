import Deadlines
import ServiceLifecycle

/// Wakes the applying stage about once a `interval` while no request does, so that watches reach their `expiresAt`
/// while the store is idle (RequestProcessor+Expiry.swift: the applying stage ends the watches due whenever it wakes).
/// The timer's state is the `watch` table itself, so nothing is lost across restarts.
struct ExpiryTimer: Service {
    /// The applying stage's wakeup.
    let wake: AsyncStream<Void>.Continuation
    let interval: Duration
    /// The clock ``interval`` is measured by (``StoreTiming/clock``).
    let clock: ServiceClock

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    try await clock.sleep(for: interval)
                    wake.yield()
                }
            }
        } catch is CancellationError {
            // Graceful shutdown: the timer just stops.
        }
    }
}
