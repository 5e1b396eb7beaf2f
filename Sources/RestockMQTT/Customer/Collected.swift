import Deadlines
import Synchronization

/// Values gathered by one task and read by another, and a wait for them to stop coming.
final class Collected<T: Sendable>: Sendable {
    private struct State {
        var values: [T] = []
        /// Opened, and replaced, at each value: what a wait for the next one waits on.
        var next = Latch()
    }
    private let storage = Mutex(State())

    func append(_ value: T) {
        let arrived = storage.withLock { state in
            state.values.append(value)
            defer { state.next = Latch() }
            return state.next
        }
        arrived.open()
    }
    var count: Int { storage.withLock { $0.values.count } }
    var values: [T] { storage.withLock { $0.values } }

    /// Returns once `quiet` has passed with no new value (`first` before the first one): what a broker sends right
    /// after an answer (retained messages after a SUBACK, a session's queue after a CONNACK) is over. Woken by each
    /// value as it comes, not by polling.
    func waitForQuiet(_ quiet: Duration, first: Duration) async throws {
        var (signal, window) = storage.withLock { ($0.next, $0.values.isEmpty ? first : quiet) }
        while await signal.wait(timeout: window) {
            (signal, window) = (storage.withLock { $0.next }, quiet)
        }
        try Task.checkCancellation()
    }
}
