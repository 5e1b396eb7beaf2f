/// An observer of a ``Store``: it is told of each alert raised for the customers it observes.
///
/// The store knows observers only through this protocol. It calls `restockAlertRaised(_:)` synchronously,
/// outside its locks, on the thread that caused the alert: the alerts of one stock change in ascending watch position;
/// those of stock changes made at the same time on different threads may reach it interleaved. An observer must
/// not block: hand slow work to your own task or queue, or consume ``Store/alerts(for:)`` instead, which
/// buffers. An error thrown here is reported to the store's failure handler and stops no other observer.
///
/// An observer may change the store from inside its callback (the lock is not held then). Such a write delivers its
/// own alerts at once, on the same thread, before the rest of the current delivery: observers later in the current
/// delivery (another customer's, or those of every alert) hear the nested change's alerts before the alert they were
/// being told of, and the remaining alerts of the outer change.
public protocol RestockObserver: Sendable {
    /// Called once for each alert raised for an observed customer.
    func restockAlertRaised(_ alert: RestockAlert) throws
}

/// An observer made of a closure.
public struct ClosureObserver: RestockObserver {
    private let handler: @Sendable (RestockAlert) throws -> Void

    /// Wraps `handler`.
    public init(_ handler: @escaping @Sendable (RestockAlert) throws -> Void) {
        self.handler = handler
    }

    /// Calls the closure with the alert.
    public func restockAlertRaised(_ alert: RestockAlert) throws { try handler(alert) }
}
