import Synchronization

/// An ``InMemoryBroker`` refusing subscriptions with reason code 0x80, as a clustered broker (NATS) does for seconds
/// after it loses a node, while it elects leaders.
public final class SubscriptionRefusals: Sendable {
    private let state = Mutex((remaining: 0, refused: 0))

    init() {}

    /// Refuses the next `count` subscriptions (`Int.max`: every one until ``stop()``).
    public func refuse(next count: Int) { state.withLock { $0.remaining = max(count, 0) } }

    /// Answers every subscription from now on.
    public func stop() { state.withLock { $0.remaining = 0 } }

    /// How many subscriptions were refused so far.
    public var refused: Int { state.withLock { $0.refused } }

    /// Whether to refuse this subscription (counting it).
    func refuses() -> Bool {
        state.withLock { state in
            guard state.remaining > 0 else { return false }
            if state.remaining != Int.max { state.remaining -= 1 }
            state.refused += 1
            return true
        }
    }
}
