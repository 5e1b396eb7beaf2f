import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline

/// How a storage takes the lease of its store when it is opened (``StorageClaim``), on the database's clock.
struct LeaseClaim {
    let session: PostgresSession
    let store: StoreID

    /// What a normal start found.
    private enum Start {
        case taken(Int64)
        case refused(owner: String)
    }

    /// Takes the lease as `claim` says; returns the epoch taken.
    /// - Throws: ``RestockMQTTError/dataDirectoryLeased(_:owner:)`` when a normal start finds another instance that
    ///   renewed the lease within its lifetime; a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` naming the
    ///   holder when a takeover's `seen` is not the lease any more.
    func take(_ claim: StorageClaim) throws -> Int64 {
        switch claim {
        case .exclusive(let instance): try exclusive(instance)
        case .takeover(let instance, let takeover): try takeOver(instance, seen: takeover.seen)
        }
    }

    /// A normal start of `instance`: refused while another instance holds a lease renewed within its lifetime by the
    /// database's clock; otherwise it takes the lease at the next epoch, in one transaction that locks the row.
    private func exclusive(_ instance: String) throws -> Int64 {
        let start: Start = try session.transaction(.open) { statements in
            guard let holder = try PostgresLease.holder(of: store, in: statements, lifetime: session.settings.leaseLifetime, locking: true) else {
                throw StorageError(.open, session.settings.location, cause: MissingLease(store: store))
            }
            if !holder.released, holder.owner != instance, holder.fresh { return .refused(owner: holder.owner) }
            try statements.execute(
                """
                UPDATE restock_lease SET epoch = epoch + 1, owner = \(instance), renewals = 0, renewed_at = now(), released = false
                WHERE store = \(store.rawValue)
                """)
            return .taken(holder.epoch + 1)
        }
        switch start {
        case .taken(let epoch): return epoch
        case .refused(let owner): throw RestockMQTTError.dataDirectoryLeased(session.settings.location, owner: owner)
        }
    }

    /// A standby's takeover: the lease is taken only if it still is exactly what `seen` describes — its epoch, owner and
    /// renewals (a compare-and-swap: of two standbys that judged the same owner gone, one wins; an owner that renewed
    /// meanwhile keeps it). Without `seen`, the lease as it is now.
    private func takeOver(_ instance: String, seen: LeaseHolder?) throws -> Int64 {
        let expected: (epoch: Int64, owner: String, renewals: Int64)
        if let seen {
            expected = (seen.epoch, seen.owner, seen.renewals)
        } else {
            let current = try session.run(.open) { statements in try PostgresLease.holder(of: store, in: statements, lifetime: session.settings.leaseLifetime) }
            guard let current else { throw StorageError(.open, session.settings.location, cause: MissingLease(store: store)) }
            expected = (current.epoch, current.currentOwner, current.renewals)
        }
        let holder: PostgresLease.Holder? = try session.transaction(.open) { statements in
            // `FOR UPDATE` first: it waits for the owner's fenced write under way (`FOR KEY SHARE`), which the update alone
            // (no key changed) would not.
            _ = try PostgresLease.holder(of: store, in: statements, lifetime: session.settings.leaseLifetime, locking: true)
            let changed = try statements.execute(
                """
                UPDATE restock_lease SET epoch = \(expected.epoch + 1), owner = \(instance), renewals = 0, renewed_at = now(),
                    released = false
                WHERE store = \(store.rawValue) AND epoch = \(expected.epoch) AND renewals = \(expected.renewals)
                    AND (CASE WHEN released THEN '' ELSE owner END) = \(expected.owner)
                """)
            return changed == 1 ? nil : try PostgresLease.holder(of: store, in: statements, lifetime: session.settings.leaseLifetime)
        }
        if let holder { throw StorageError.leaseLost(session.settings.location, owner: holder.owner, epoch: holder.epoch) }
        return expected.epoch + 1
    }
}

/// The lease row of a store is missing although the storage made it when it opened (removed by hand meanwhile).
struct MissingLease: StorageFailure {
    let store: StoreID
    var reason: String { "the lease of store \(store) is missing from restock_lease (removed by hand?)" }
    var code: Int { -4 }
    var refusesTheData: Bool { false }
    func kind(at path: String) -> StorageError.Kind { .corrupt }
}
