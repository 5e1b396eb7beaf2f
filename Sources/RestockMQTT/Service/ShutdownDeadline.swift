import RestockPipeline
import Synchronization

/// When a graceful shutdown must stop publishing: unset while the store runs, set once when it begins to stop.
final class ShutdownDeadline: Sendable {
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)
    private let waiters = Mutex<(begun: Bool, list: [UInt64: CheckedContinuation<Bool, Never>], next: UInt64)>((false, [:], 0))

    /// Starts the drain: publishing may go on for `duration` from now (the first call wins).
    func begin(drainingFor duration: Duration) {
        deadline.withLock { $0 = $0 ?? .now + duration }
        let waiting = waiters.withLock { state in
            state.begun = true
            defer { state.list = [:] }
            return Array(state.list.values)
        }
        for waiter in waiting { waiter.resume(returning: true) }
    }

    /// Returns `true` once the drain has begun, or `false` when the waiting task is cancelled first.
    func begun() async -> Bool {
        let id = waiters.withLock { state -> UInt64 in
            defer { state.next += 1 }
            return state.next
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = waiters.withLock { state in
                    if state.begun { return true }
                    if Task.isCancelled { return false }
                    state.list[id] = waiter
                    return nil
                }
                if let resumeNow { waiter.resume(returning: resumeNow) }
            }
        } onCancel: {
            waiters.withLock { $0.list.removeValue(forKey: id) }?.resume(returning: false)
        }
    }

    /// Whether the store is stopping.
    var isStopping: Bool { deadline.withLock { $0 != nil } }

    /// Whether the drain's time is up.
    var hasPassed: Bool { deadline.withLock { $0.map { .now >= $0 } ?? false } }
}
