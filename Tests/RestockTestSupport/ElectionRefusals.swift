import Synchronization

/// An ``InMemoryBroker`` refusing what a clustered broker (NATS) refuses for seconds after it loses a node, while it
/// elects leaders: subscriptions (reason code 0x80), or new connections (closed before their CONNACK).
public final class ElectionRefusals: Sendable {
    private let state = Mutex((remaining: 0, refused: 0))

    init() {}

    /// Refuses the next `count` (`Int.max`: every one until ``stop()``).
    public func refuse(next count: Int) { state.withLock { $0.remaining = max(count, 0) } }

    /// Answers every one from now on.
    public func stop() { state.withLock { $0.remaining = 0 } }

    /// How many were refused so far.
    public var refused: Int { state.withLock { $0.refused } }

    /// Whether to refuse this one (counting it).
    func refuses() -> Bool {
        state.withLock { state in
            guard state.remaining > 0 else { return false }
            if state.remaining != Int.max { state.remaining -= 1 }
            state.refused += 1
            return true
        }
    }
}
