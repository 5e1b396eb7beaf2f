/// Keeps an observer registered. Cancelling it, or releasing the last reference to it, unregisters the
/// observer: after `cancel()` returns, the observer is not called again, but by a delivery already under way on
/// another thread (a call running finishes, and a delivery checks each observer just before its call, so one that
/// checked before the cancel may still call). This rules out lapsed listeners.
public final class ObservationToken: Sendable, Hashable {
    private let registration: ObserverRegistration
    private let home: any ObserverHome

    init(registration: ObserverRegistration, home: any ObserverHome) {
        self.registration = registration
        self.home = home
    }

    deinit { cancel() }

    /// Unregisters the observer. Calling it again does nothing.
    public func cancel() {
        home.remove(registration)
    }

    /// Whether the observer is still registered.
    public var isActive: Bool { registration.isActive }

    /// Keeps the token in `set`, Combine-style, so the observer lives as long as the set holds it.
    public func store(in set: inout Set<ObservationToken>) {
        set.insert(self)
    }

    /// A token equals only itself.
    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool { lhs === rhs }

    /// Hashes the token's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
