import Foundation
import GRDB
import Synchronization

/// Who owns a data directory: a lease with an epoch, in one row of `store.sqlite` (docs/architecture.md, "Ownership:
/// the lease").
///
/// The epoch is a fencing token. It rises by one with every new owner (a compare-and-swap on the epoch the new owner
/// saw), and the owner mirrors it into `journal.sqlite` right after taking it. Every write transaction of either file
/// made through a fenced storage type (the commit, the journal's append, the outbox's acknowledgements, a dead letter)
/// first reads the file's epoch and is refused with a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` once a
/// newer owner's is there; from then on this process refuses every write at once, without reading.
///
/// The owner renews the lease about every second (``renewalInterval``): a counter rises (`renewals`), and the
/// owner's wall clock is noted (`renewedAt`). A standby judges the owner alive by seeing the counter change, timed by
/// its own monotonic clock (``LeaseWatch``); a normal start, which must answer at once, reads `renewedAt` against this
/// machine's clock, which errs only towards refusing.
package final class StoreLease: StoreOwnership {
    /// The lease as the file holds it.
    package typealias Holder = LeaseHolder

    /// How long a lease lasts without a renewal before a standby takes it over.
    package static let lifetime = LeaseHolder.lifetime
    /// How often the owner renews it (and a standby looks at it).
    package static let renewalInterval = LeaseHolder.renewalInterval

    /// The lease's row, unfenced: the lease itself is written by compare-and-swap.
    private let state: StorageFile
    private let log: StorageFile
    /// The epoch this process holds, shared with every fenced storage type of the directory.
    package let fence: LeaseFence
    /// Until when no other process can have taken the lease (``LeaseHolder/surelyHeld(lifetime:)`` after the last
    /// renewal began): ``check()`` reads the file only after it.
    private let heldUntil = Mutex<ContinuousClock.Instant?>(nil)

    /// The lease of the state in `state` (whose schema is ready), mirrored into the request log in `log`.
    init(state: any DatabaseWriter, log: any DatabaseWriter, statePath: String? = nil, logPath: String? = nil, fence: LeaseFence) {
        self.state = StorageFile(state, path: statePath)
        self.log = StorageFile(log, path: logPath)
        self.fence = fence
    }

    /// The epoch this process holds, if it took the lease.
    package var heldEpoch: Int64? { fence.heldEpoch }

    /// The lease as the file holds it now.
    package func holder() throws(StorageError) -> Holder {
        try state.read { db in try Self.holder(in: db) }
    }

    /// The lease of the data directory in `directory`, read without taking anything (a standby watching); `nil` when
    /// it holds no state yet, or a state of a version without a lease.
    package static func holder(readingOnly directory: URL) -> Holder? {
        let data = DataDirectory(directory)
        guard FileManager.default.fileExists(atPath: data.statePath), let pool = try? data.openStateReadOnly() else { return nil }
        return try? pool.read { db in try db.tableExists("lease") ? try holder(in: db) : nil }
    }

    private static func holder(in db: Database) throws -> Holder {
        // Prepared once per connection: the publisher reads it before each round.
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT epoch, owner, renewals, renewedAt, locked FROM lease WHERE id = 1")) else {
            return Holder(epoch: 0, owner: "", renewals: 0, renewedAt: .distantPast, holdsLock: false)
        }
        return Holder(
            epoch: row["epoch"], owner: row["owner"], renewals: row["renewals"],
            renewedAt: Date(timeIntervalSince1970: row["renewedAt"]), holdsLock: row["locked"])
    }

    /// The process of the last owner that recorded itself in the request log of the data directory in `directory`, at
    /// `epoch` or before it (an owner whose lease was taken later by one that never finished, or never recorded
    /// itself), read without taking anything; `nil` when none is recorded (an owner of an earlier version), or the
    /// record is of a later epoch.
    static func ownerProcess(readingOnly directory: URL, epoch: Int64) -> ProcessIdentity? {
        guard let pool = try? DataDirectory(directory).openLogReadOnly(),
            let recorded = try? pool.read({ db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'process'") })
        else { return nil }
        guard let space = recorded.firstIndex(of: " "), let at = Int64(recorded[..<space]), at <= epoch else { return nil }
        return ProcessIdentity(recorded: String(recorded[recorded.index(after: space)...]))
    }

    /// Takes the lease for `instance` at the epoch after `seen`'s — only if the file still holds that epoch and that
    /// count of renewals (a compare-and-swap: of two standbys that judged the same owner gone, one wins; an owner that
    /// renewed meanwhile keeps it) — then writes the new epoch into
    /// the request log. Returns the new epoch.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` naming the holder when another took it first.
    @discardableResult
    package func acquire(for instance: String, seen: Holder, holdsLock: Bool, at now: Date) throws(StorageError) -> Int64 {
        let epoch = seen.epoch + 1
        let began = ContinuousClock.now
        // With the process that holds it, at that epoch: a standby may end it should it freeze holding a lock (StalledOwner).
        let process = ProcessIdentity.current.map { "\(epoch) \($0.recorded)" } ?? ""
        // The request log's write lock first, held until the lease is taken: a lease taken in the state but not mirrored
        // into a log locked by another process (the owner, frozen while appending) left an owner of no process, which
        // the standby then waited on (found by an outside trial). Either both change, or neither.
        try log.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('epoch', ?), ('owner', ?), ('process', ?)",
                arguments: ["\(epoch)", instance, process])
            let taken = try state.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO lease (id, epoch, owner, renewals, renewedAt, locked) VALUES (1, ?, ?, 0, ?, ?)
                        ON CONFLICT (id) DO UPDATE SET epoch = excluded.epoch, owner = excluded.owner, renewals = 0,
                            renewedAt = excluded.renewedAt, locked = excluded.locked
                        WHERE lease.epoch = ? AND lease.renewals = ?
                        """,
                    arguments: [epoch, instance, now.timeIntervalSince1970, holdsLock, seen.epoch, seen.renewals])
                return db.changesCount == 1 ? nil : try Self.holder(in: db)
            }
            // Another took it first: the log's rows are rolled back.
            if let holder = taken { throw StorageError.leaseLost(state.path, owner: holder.owner, epoch: holder.epoch) }
        }
        fence.hold(epoch)
        heldSince(began)
        return epoch
    }

    /// A renewal (or the taking) that began at `began` went through: nobody else can hold the lease for a while.
    private func heldSince(_ began: ContinuousClock.Instant) {
        let until = began + LeaseHolder.surelyHeld(lifetime: Self.lifetime)
        heldUntil.withLock { $0 = max($0 ?? until, until) }
    }

    /// Renews the lease: its counter rises and `now` is noted, if this process still holds it.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` naming the new owner once a newer one holds it.
    package func renew(at now: Date) throws(StorageError) {
        guard let epoch = try fence.epoch(path: state.path) else { return }
        let began = ContinuousClock.now
        let lost = try state.write { db in
            try db.execute(
                sql: "UPDATE lease SET renewals = renewals + 1, renewedAt = ? WHERE id = 1 AND epoch = ?",
                arguments: [now.timeIntervalSince1970, epoch])
            return db.changesCount == 1 ? nil : try Self.holder(in: db)
        }
        if let holder = lost { throw fence.lose(to: holder.owner, epoch: holder.epoch, path: state.path) }
        heldSince(began)
    }

    /// Notes that the holder has the directory's lock now (a standby that took over a frozen store, once that one ended).
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` once a newer owner holds it.
    package func markLocked() throws(StorageError) {
        guard let epoch = try fence.epoch(path: state.path) else { return }
        let lost = try state.write { db in
            try db.execute(sql: "UPDATE lease SET locked = 1 WHERE id = 1 AND epoch = ?", arguments: [epoch])
            return db.changesCount == 1 ? nil : try Self.holder(in: db)
        }
        if let holder = lost { throw fence.lose(to: holder.owner, epoch: holder.epoch, path: state.path) }
    }

    /// Whether this process still holds the lease (the publisher before each round, the heartbeat before each beat):
    /// read from the file, unless its last renewal began less than ``LeaseHolder/surelyHeld(lifetime:)`` ago, which no
    /// takeover can have followed yet (a read of the file was a tenth of an alert's way from its commit to the broker,
    /// docs/benchmarks.md).
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` once a newer owner holds it.
    package func check() throws(StorageError) {
        guard let epoch = try fence.epoch(path: state.path) else { return }
        if let until = heldUntil.withLock({ $0 }), ContinuousClock.now < until { return }
        let holder = try holder()
        if holder.epoch != epoch { throw fence.lose(to: holder.owner, epoch: holder.epoch, path: state.path) }
    }

    /// Lets the lease go at a clean stop, if this process still holds it: a standby takes over at its next look, or —
    /// when this process holds the directory's lock, which it lets go next — when the kernel hands it the lock. `locked`
    /// stays as it was, so that a standby can tell the two apart.
    package func release() {
        heldUntil.withLock { $0 = nil }
        guard let epoch = try? fence.epoch(path: state.path) else { return }  // lost, or never taken
        _ = try? state.write { db in
            try db.execute(sql: "UPDATE lease SET owner = '' WHERE id = 1 AND epoch = ?", arguments: [epoch])
        }
    }
}

/// The epoch this process holds, checked inside every fenced write transaction (``StoreLease``). Before the lease is
/// taken (tools, and tests that open a directory without one) nothing is checked.
package final class LeaseFence: Sendable {
    private struct State {
        var epoch: Int64?
        var lost: StorageError.LeaseLost?
    }

    private let state = Mutex(State())

    /// A fence that holds no epoch yet.
    package init() {}

    /// This process holds `epoch` now.
    func hold(_ epoch: Int64) { state.withLock { $0 = State(epoch: epoch, lost: nil) } }

    /// The epoch held, if any.
    package var heldEpoch: Int64? { state.withLock { $0.epoch } }

    /// The epoch held; `nil` when none was taken (nothing is fenced then).
    /// - Throws: ``StorageError/Kind/leaseLost`` once lost.
    fileprivate func epoch(path: String) throws(StorageError) -> Int64? {
        let (epoch, lost) = state.withLock { ($0.epoch, $0.lost) }
        if let lost { throw StorageError.leaseLost(path, owner: lost.owner, epoch: lost.epoch) }
        return epoch
    }

    /// A newer owner holds the lease: every write is refused from now on.
    fileprivate func lose(to owner: String, epoch: Int64, path: String) -> StorageError {
        let lost = state.withLock { state in
            state.lost = state.lost ?? StorageError.LeaseLost(owner: owner, epoch: epoch)
            return state.lost!
        }
        return StorageError.leaseLost(path, owner: lost.owner, epoch: lost.epoch)
    }

    /// Which file a fenced write goes to: the epoch is read where that file keeps it.
    enum File: Sendable {
        /// `store.sqlite`: the lease's row.
        case state
        /// `journal.sqlite`: the epoch the owner mirrored into its `meta`.
        case log
    }

    /// Refuses the write transaction of `db` (on `path`, a `file`) when a newer owner's epoch is there. Runs inside the
    /// transaction, after its write lock is taken, so that no newer owner's epoch can come between the check and the
    /// commit.
    func check(_ db: Database, file: File, path: String) throws {
        guard let epoch = try self.epoch(path: path) else { return }
        let current: (epoch: Int64, owner: String)?
        switch file {
        case .state:
            // Statements prepared once per connection: this runs in every write transaction.
            current = try Row.fetchOne(db.cachedStatement(sql: "SELECT epoch, owner FROM lease WHERE id = 1")).map { ($0["epoch"], $0["owner"]) }
        case .log:
            let values = try Row.fetchAll(db.cachedStatement(sql: "SELECT key, value FROM meta WHERE key IN ('epoch', 'owner')"))
                .reduce(into: [String: String]()) { $0[$1["key"]] = $1["value"] }
            current = values["epoch"].flatMap(Int64.init).map { ($0, values["owner"] ?? "?") }
        }
        guard let current, current.epoch != epoch else { return }
        throw lose(to: current.owner, epoch: current.epoch, path: path)
    }
}

/// A standby's view of a lease it does not hold: the owner is alive while its renewals change, timed by the standby's
/// own monotonic clock — never by comparing the owner's clock with this one.
package struct LeaseWatch: Sendable {
    private var last: (epoch: Int64, owner: String, renewals: Int64)?
    private var since: ContinuousClock.Instant?
    /// How long the lease may go without a change before it counts as lapsed.
    package let lifetime: Duration

    /// A watch that judges a lease lapsed after `lifetime` without a change.
    package init(lifetime: Duration = StoreLease.lifetime) { self.lifetime = lifetime }

    /// Notes `holder` as seen at `now`; returns whether the lease is free to take: released by a holder without the
    /// directory's lock, or not changed for ``lifetime`` since this watch first saw it as it is. A holder with the lock
    /// that released the lease lets the lock go next, which wakes a standby by itself (found by an outside trial: a
    /// standby took the released lease first, without the lock, and said the owner "has not renewed").
    package mutating func lapsed(_ holder: StoreLease.Holder, at now: ContinuousClock.Instant) -> Bool {
        if holder.isReleased, !holder.holdsLock { return true }
        let mark = (holder.epoch, holder.owner, holder.renewals)
        guard let last, let since, last == mark else {
            (self.last, self.since) = (mark, now)
            return false
        }
        return now - since >= lifetime
    }
}
