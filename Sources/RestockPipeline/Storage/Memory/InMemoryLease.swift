import Foundation
import Synchronization

/// The lease a storage took when it was opened on an ``InMemoryVolume``: its epoch, which every write of the storage
/// checks under the volume's lock, as SQLite's ``LeaseFence`` checks it inside each transaction. Once a newer owner
/// holds the volume's lease, every write is refused with a ``StorageError`` of kind ``StorageError/Kind/leaseLost``
/// naming it — from then on at once, as SQLite's fence does.
final class InMemoryLease: StoreOwnership {
    /// The volume.
    private let volume: InMemoryVolume
    /// The epoch this storage holds.
    let epoch: Int64
    /// The newer owner, once one took the lease.
    private let lost = Mutex<StorageError.LeaseLost?>(nil)

    /// The lease at `epoch` of `volume`, just taken.
    init(volume: InMemoryVolume, epoch: Int64) {
        self.volume = volume
        self.epoch = epoch
    }

    /// The epoch this storage holds.
    var heldEpoch: Int64? { epoch }

    /// Runs `body` on the volume's contents under its lock, if this storage still holds the lease: one fenced write.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` once a newer owner holds it; what `body`
    ///   throws.
    func write<T: Sendable>(_ body: (inout InMemoryVolume.Contents) throws(StorageError) -> T) throws(StorageError) -> T {
        if let lost = lost.withLock({ $0 }) { throw StorageError.leaseLost(volume.name, owner: lost.owner, epoch: lost.epoch) }
        return try volume.withContents { (contents: inout InMemoryVolume.Contents) throws(StorageError) -> T in
            guard contents.lease.epoch == epoch else { throw lose(to: contents.lease) }
            return try body(&contents)
        }
    }

    /// A newer owner holds the lease: every write is refused from now on, naming the first newer owner seen.
    private func lose(to holder: (epoch: Int64, owner: String)) -> StorageError {
        let lost = lost.withLock { lost in
            let first = lost ?? StorageError.LeaseLost(owner: holder.owner, epoch: holder.epoch)
            lost = first
            return first
        }
        return StorageError.leaseLost(volume.name, owner: lost.owner, epoch: lost.epoch)
    }

    /// Renews the lease, if this storage still holds it (nothing to note in memory: no standby watches a volume).
    func renew(at now: Date) throws(StorageError) {
        volume.waitWhileHeld(.leaseRenewals)
        try write { contents throws(StorageError) in
            if contents.refusesLeaseRenewals { throw StorageError.system(.write, volume.name, errno: EIO) }
        }
    }

    /// Whether this storage still holds the lease.
    func check() throws(StorageError) { try write { _ in } }

    /// Lets the lease go at a clean stop, if this storage still holds it.
    func release() { try? write { $0.lease.owner = "" } }
}
