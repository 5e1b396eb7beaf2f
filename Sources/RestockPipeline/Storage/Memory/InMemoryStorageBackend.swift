import Foundation
import Logging
import RestockCore

/// The memory backend: a store's storage on an ``InMemoryVolume``, which outlives each storage opened on it — a store
/// stopped and started again on the same volume in one process finds its state, as one started again on a data
/// directory does. For tests of the service that need no disk.
package struct InMemoryStorageBackend: StoreStorageBackend {
    /// Where the state lives.
    package let volume: InMemoryVolume

    /// The backend of `volume` (by default a new, empty one).
    package init(volume: InMemoryVolume = InMemoryVolume()) { self.volume = volume }

    /// The volume's name.
    package var location: String { volume.name }

    /// `memory`.
    package var engine: String { "memory" }

    /// None: the state lives in this process.
    package var journalWitness: (any JournalWitness)? { nil }

    /// Opens a storage on the volume, taking its lease as `claim` says (``InMemoryVolume/open(for:claim:)``); `now` is
    /// not needed: no clock judges a lease in memory.
    package func open(for store: StoreID, claim: StorageClaim, now: Date) throws -> any StoreStorage {
        try InMemoryStorage(volume: volume, for: store, claim: claim)
    }

    /// Refuses a volume that holds another store's state.
    package func prepareStandby(for store: StoreID) throws {
        if let owner = volume.owningStore, owner != store { throw RestockMQTTError.dataDirectoryOfAnotherStore(volume.name, owner: owner.rawValue) }
    }

    /// Waits until every storage opened on the volume has let it go (a memory volume has no clock to lapse a lease by).
    package func waitForTheOwnerToGo(of store: StoreID, logger _: Logger) async throws -> StandbyTakeover {
        guard await volume.waitUntilFree() else { throw CancellationError() }
        let lease = volume.lease
        let seen = lease.epoch == 0 ? nil : LeaseHolder(epoch: lease.epoch, owner: lease.owner, renewals: 0, renewedAt: Date(), holdsLock: true)
        return StandbyTakeover(hold: VolumeHold(), seen: seen)
    }

    /// What a memory standby holds once the owner let the volume go: nothing to let go of.
    private final class VolumeHold: OwnershipHold {
        func release() {}
    }
}
