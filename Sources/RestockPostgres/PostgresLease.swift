import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline
import Synchronization

/// Who owns a store's storage in PostgreSQL: a row of `restock_lease` per store — owner instance, epoch, renewals,
/// when it was last renewed, whether it was released — judged on the database's clock (`now()`), never on a store
/// process's (docs/architecture.md, "Ownership: the lease").
///
/// The epoch is the fencing token, as in SQLite's ``StoreLease``: it rises by one with every new owner, and every writing
/// transaction of the storage first reads it, locking the row `FOR KEY SHARE` (``PostgresFence``): a takeover locks the
/// row `FOR UPDATE` before it changes it, so it waits for the write to end, and a write that waited for a takeover reads
/// the new epoch and is refused. A renewal's update (no key changed) takes a lock that `FOR KEY SHARE` lets through: on
/// a connection of its own, it never waits behind a long commit (a fan-out to 100,000 customers).
final class PostgresLease: StoreOwnership {
    /// The lease's row as the database holds it.
    struct Holder: Sendable, Equatable {
        /// The fencing token of the owner.
        var epoch: Int64
        /// The owner's instance (kept once released, for the logs).
        var owner: String
        /// How many times the owner renewed it since it took it.
        var renewals: Int64
        /// The database's clock at the owner's last renewal.
        var renewedAt: Date
        /// Whether the owner let it go at a clean stop.
        var released: Bool
        /// Whether it was renewed within ``LeaseHolder/lifetime`` of the database's clock when it was read.
        var fresh: Bool

        /// The owner as ``LeaseHolder`` names it: empty once released.
        var currentOwner: String { released ? "" : owner }
    }

    private let session: PostgresSession
    private let store: StoreID
    /// The epoch this storage holds, checked by every write.
    let fence: PostgresFence
    /// Until when no other process can have taken the lease over, by this process's clock, after its last renewal:
    /// ``check()`` reads the lease only past it.
    private let heldUntil = Mutex<ContinuousClock.Instant?>(nil)

    /// The lease of `store` in the session's database, fenced by `fence`.
    init(session: PostgresSession, store: StoreID, fence: PostgresFence) {
        self.session = session
        self.store = store
        self.fence = fence
    }

    /// The epoch this storage holds, if it took the lease.
    var heldEpoch: Int64? { fence.heldEpoch }

    /// Closes the lease's connection (the next call makes a new one).
    func disconnect() { session.disconnect() }

    /// The columns a ``Holder`` is read from, the last one judged on the database's clock against `lifetime`.
    static func columns(lifetime: Duration) -> String {
        "epoch, owner, renewals, renewed_at, released, abs(extract(epoch FROM now() - renewed_at)) < \(lifetime.seconds) AS fresh"
    }

    /// The lease of `store` as read by `statements` (`FOR UPDATE` when `locking`); `nil` when it has no row yet.
    static func holder(of store: StoreID, in statements: Statements, lifetime: Duration, locking: Bool = false) throws -> Holder? {
        let rows = try statements.query(
            "SELECT \(unescaped: columns(lifetime: lifetime)) FROM restock_lease WHERE store = \(store.rawValue)\(unescaped: locking ? " FOR UPDATE" : "")")
        return try rows.first.map(holder(from:))
    }

    /// A ``Holder`` from a row of ``columns``.
    static func holder(from row: PostgresRow) throws -> Holder {
        let (epoch, owner, renewals, renewedAt, released, fresh) = try row.decode((Int64, String, Int64, Date, Bool, Bool).self)
        return Holder(epoch: epoch, owner: owner, renewals: renewals, renewedAt: renewedAt, released: released, fresh: fresh)
    }

    /// The lease as the database holds it now.
    func holder() throws(StorageError) -> Holder? {
        try session.run(.read) { statements in try Self.holder(of: store, in: statements, lifetime: session.settings.leaseLifetime) }
    }

    /// Renews the lease on the database's clock (`now` is not used: no process's clock judges the lease), if this
    /// storage still holds it.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` naming the new owner once a newer one holds it.
    func renew(at now: Date) throws(StorageError) {
        guard let epoch = try fence.epoch(path: session.settings.location) else { return }
        let sent = ContinuousClock.now
        let lost: Holder? = try session.run(.write) { statements in
            let changed = try statements.execute(
                "UPDATE restock_lease SET renewals = renewals + 1, renewed_at = now() WHERE store = \(store.rawValue) AND epoch = \(epoch)")
            return changed == 1 ? nil : try Self.holder(of: store, in: statements, lifetime: session.settings.leaseLifetime)
        }
        if let lost { throw fence.lose(to: lost, path: session.settings.location) }
        let until = sent + Self.surelyHeld(lifetime: session.settings.leaseLifetime)
        heldUntil.withLock { $0 = max($0 ?? until, until) }
    }

    /// How long after a renewal was sent no other process can have taken the lease over (``LeaseHolder/surelyHeld(lifetime:)``):
    /// a standby takes it only once it has seen the renewals stand still for the lease's lifetime by its own clock
    /// (``PostgresStorage``'s standby), and a normal start only once the database's clock says it was not renewed for
    /// that long — each counted from after the renewal was sent.
    static func surelyHeld(lifetime: Duration) -> Duration { LeaseHolder.surelyHeld(lifetime: lifetime) }

    /// Whether this storage still holds the lease: read from the database, unless a renewal was sent less than
    /// ``surelyHeld(lifetime:)`` ago, which no takeover can have followed yet. The publisher asks before each round
    /// of alerts: on a healthy store it costs no round trip, and a process frozen or stalled past it reads the lease
    /// again before it sends anything.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` once a newer owner holds it.
    func check() throws(StorageError) {
        guard let epoch = try fence.epoch(path: session.settings.location) else { return }
        if let until = heldUntil.withLock({ $0 }), ContinuousClock.now < until { return }
        if let holder = try holder(), holder.epoch != epoch { throw fence.lose(to: holder, path: session.settings.location) }
    }

    /// Lets the lease go at a clean stop, if this storage still holds it: a standby, or a normal start, takes it at once.
    func release() {
        heldUntil.withLock { $0 = nil }
        guard let epoch = try? fence.epoch(path: session.settings.location) else { return }  // lost, or never taken
        _ = try? session.run(.write) { statements in
            try statements.execute("UPDATE restock_lease SET released = true WHERE store = \(store.rawValue) AND epoch = \(epoch)")
        }
    }
}

/// The epoch a storage holds, checked inside every fenced write transaction (``PostgresLease``); once a newer owner is
/// seen, every write is refused at once, naming the first newer owner seen (as SQLite's `LeaseFence`).
final class PostgresFence: Sendable {
    private struct State {
        var epoch: Int64?
        var lost: StorageError.LeaseLost?
    }

    private let state = Mutex(State())
    /// The store whose lease it checks.
    let store: StoreID

    /// A fence of `store` that holds no epoch yet.
    init(store: StoreID) { self.store = store }

    /// This storage holds `epoch` now.
    func hold(_ epoch: Int64) { state.withLock { $0 = State(epoch: epoch, lost: nil) } }

    /// The epoch held, if any.
    var heldEpoch: Int64? { state.withLock { $0.epoch } }

    /// The epoch held; `nil` when none was taken (nothing is fenced then).
    /// - Throws: ``StorageError/Kind/leaseLost`` once lost.
    func epoch(path: String) throws(StorageError) -> Int64? {
        let (epoch, lost) = state.withLock { ($0.epoch, $0.lost) }
        if let lost { throw StorageError.leaseLost(path, owner: lost.owner, epoch: lost.epoch) }
        return epoch
    }

    /// A newer owner holds the lease: every write is refused from now on.
    func lose(to holder: PostgresLease.Holder, path: String) -> StorageError {
        let lost = state.withLock { state in
            let first = state.lost ?? StorageError.leaseLost(path, owner: holder.owner, epoch: holder.epoch).leaseLost!
            state.lost = first
            return first
        }
        return StorageError.leaseLost(path, owner: lost.owner, epoch: lost.epoch)
    }

    /// The SQLSTATE `restock_fence` refuses a write with (``PostgresSchema``): a newer owner's epoch is in the lease.
    static let refusal = "RS001"

    /// The error of a write `restock_fence` refused: the storage loses the lease to the holder `statements` read now.
    /// - Returns: `nil` when the lease's row is gone, or holds this storage's epoch again (the refusal then stands as it is).
    func refused(_ statements: Statements, path: String) throws -> StorageError? {
        guard let epoch = try self.epoch(path: path),
            let holder = try PostgresLease.holder(of: store, in: statements, lifetime: LeaseHolder.lifetime), holder.epoch != epoch
        else { return nil }
        return lose(to: holder, path: path)
    }

    /// Refuses the transaction of `statements` when a newer owner's epoch is in the lease: reads it `FOR KEY SHARE`, inside
    /// the transaction and before its writes, so that no takeover (which locks the row `FOR UPDATE` first) can commit
    /// between the check and the commit, while a renewal passes.
    func check(_ statements: Statements, path: String) throws {
        guard let epoch = try self.epoch(path: path) else { return }
        let rows = try statements.query(
            "SELECT \(unescaped: PostgresLease.columns(lifetime: LeaseHolder.lifetime)) FROM restock_lease WHERE store = \(store.rawValue) FOR KEY SHARE")
        guard let holder = try rows.first.map(PostgresLease.holder(from:)), holder.epoch != epoch else { return }
        throw lose(to: holder, path: path)
    }
}
