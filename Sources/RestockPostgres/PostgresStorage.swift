import Foundation
import Logging
import RestockCore
import RestockPipeline

/// The PostgreSQL backend: a store's storage in a database that several stores may share (``PostgresStoreStorage``),
/// owned through a lease row judged on the database's clock (``PostgresLease``).
///
/// There is no directory lock: the lease is all there is to hold, and a standby waits for the owner with
/// ``waitForTheOwnerToGo(of:)``, on the database's clock; its takeover holds nothing more (``StandbyTakeover/hold`` is
/// `nil`: the owner may still live, cut off or frozen, and is fenced by the epoch).
package struct PostgresStorage: StoreStorageBackend {
    /// Where the database is.
    package let settings: PostgresSettings
    /// How far each store's journal goes, as this backend's storages and standby looks saw it (``JournalMark``).
    let journalMarks = JournalMarks()

    /// The backend of the database of `settings`.
    package init(settings: PostgresSettings) { self.settings = settings }

    /// `postgresql://user@host:port/database`.
    package var location: String { settings.location }

    /// `postgresql`.
    package var engine: String { "postgresql" }

    /// Opens the storage of `store`, taking its lease as `claim` says; `now` is not used (the database's clock judges).
    /// - Throws: ``RestockMQTTError/dataDirectoryLeased(_:owner:)`` when another instance renewed the lease within its
    ///   lifetime; a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` when a takeover's `seen` is no longer the
    ///   lease; ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)`` for a newer schema; a
    ///   ``StorageError`` when the database cannot be used.
    package func open(for store: StoreID, claim: StorageClaim, now: Date) throws -> any StoreStorage {
        try PostgresStoreStorage(settings: settings, store: store, claim: claim, mark: journalMarks.mark(of: store))
    }

    /// The journal marks, which the broker's witness advances (``JournalWitness``).
    package var journalWitness: (any JournalWitness)? { journalMarks }
}
