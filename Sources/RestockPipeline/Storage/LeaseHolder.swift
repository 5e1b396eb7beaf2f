import Foundation

/// A store's lease as its storage holds it (docs/architecture.md, "Ownership: the lease"): who owns the store's state
/// now, at which epoch, and how lately it renewed.
package struct LeaseHolder: Sendable, Equatable {
    /// How long a lease lasts without a renewal before a standby takes it over, on every backend.
    package static let lifetime = Duration.seconds(5)
    /// How often the owner renews it (and a standby looks at it).
    package static let renewalInterval = Duration.seconds(1)

    /// How long after a renewal began no other process can have taken the lease over: a standby takes it only once it
    /// has seen the renewals stand still for the lease's lifetime by its own clock, counted from a look after the
    /// renewal. Four fifths of it, so that clocks that run at slightly different rates cannot matter. The owner's checks
    /// before each round of publishing and each heartbeat read the lease only once this has passed since its last
    /// renewal: on a healthy store they cost nothing, and a process frozen or stalled past it reads the lease again
    /// before it sends anything.
    package static func surelyHeld(lifetime: Duration) -> Duration { lifetime * 4 / 5 }

    /// The fencing token of the owner.
    package var epoch: Int64
    /// The owner's instance; empty once released at a clean stop (or never taken).
    package var owner: String
    /// How many times the owner renewed it since it took it.
    package var renewals: Int64
    /// The owner's wall clock at its last renewal.
    package var renewedAt: Date
    /// Whether the owner holds what its end frees for a standby at once (SQLite: the data directory's `flock`,
    /// `store.lock`): then that hold's being free means it is gone.
    package var holdsLock: Bool

    /// The lease of `owner` at `epoch`, renewed `renewals` times, last at `renewedAt`.
    package init(epoch: Int64, owner: String, renewals: Int64, renewedAt: Date, holdsLock: Bool) {
        self.epoch = epoch
        self.owner = owner
        self.renewals = renewals
        self.renewedAt = renewedAt
        self.holdsLock = holdsLock
    }

    /// Whether no process owns the store: released at a clean stop, or never taken.
    package var isReleased: Bool { owner.isEmpty }

    /// Whether the lease reads as renewed within `lifetime` of `now` on this machine's clock (a one-off judgement,
    /// for a normal start that cannot wait; a clock far off either way reads as stale).
    package func isFresh(at now: Date, lifetime: Duration) -> Bool {
        !isReleased && abs(now.timeIntervalSince(renewedAt)) < Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
    }
}
