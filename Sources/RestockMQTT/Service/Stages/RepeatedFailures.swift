import Synchronization

/// Failures of one step that is tried again (a lease's renewal, a read of the outbox): since when they have lasted,
/// and when one was last logged, so that an outage is logged once when it begins, then once every so often, and once
/// when it ends (an outside trial counted 32 lines in one database outage).
final class RepeatedFailures: Sendable {
    private let state = Mutex<(since: ContinuousClock.Instant, logged: ContinuousClock.Instant)?>(nil)

    /// The step failed at `now`: whether to log it (the first, then one every `reportEvery`).
    func failed(at now: ContinuousClock.Instant, reportEvery: Duration) -> Bool {
        state.withLock { state in
            guard let current = state else {
                state = (now, now)
                return true
            }
            guard now - current.logged >= reportEvery else { return false }
            state = (current.since, now)
            return true
        }
    }

    /// The step succeeded: since when it had failed, if it had.
    func succeeded(at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        state.withLock { state in
            defer { state = nil }
            return state?.since
        }
    }
}
