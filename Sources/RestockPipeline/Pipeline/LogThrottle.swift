import Synchronization

/// Lets a log line through at most once per interval, counting those held back meanwhile: for a line any client can
/// cause at will (a request with an invalid customer id), which must not fill the store's log (found by an outside
/// trial: 5,000 such requests wrote 5,000 warnings). The metrics count every one.
package final class LogThrottle: Sendable {
    private let interval: Duration
    private let state = Mutex<(lastSaid: ContinuousClock.Instant?, heldBack: Int)>((nil, 0))

    /// A throttle that lets a line through once per `interval`.
    package init(every interval: Duration = .seconds(60)) { self.interval = interval }

    /// Whether the line is said `now`; and if so, how many were held back since it was last said.
    package func admit(at now: ContinuousClock.Instant = .now) -> (say: Bool, heldBack: Int) {
        state.withLock { state in
            if let last = state.lastSaid, now - last < interval {
                state.heldBack += 1
                return (false, 0)
            }
            defer { state = (now, 0) }
            return (true, state.heldBack)
        }
    }
}
