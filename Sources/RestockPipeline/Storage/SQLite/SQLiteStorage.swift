import Foundation
import RestockCore

/// The SQLite backend: a store's storage in its data directory, `store.sqlite` and `journal.sqlite`
/// (``StoreDatabase``), owned through the directory's lock and lease (docs/operations.md, "What the store has on disk").
package struct SQLiteStorage: StoreStorageBackend {
    /// The data directory.
    package let directory: URL

    /// The backend of the data directory `directory`.
    package init(directory: URL) { self.directory = directory }

    package var location: String { directory.path }

    package var engine: String { "sqlite" }

    /// None: the data directory is the store's own, and holds its journal.
    package var journalWitness: (any JournalWitness)? { nil }

    package func open(for store: StoreID, claim: StorageClaim, now: Date) throws -> any StoreStorage {
        switch claim {
        case .exclusive(let instance):
            try StoreDatabase(directory: directory, store: store, claim: .exclusive(instance: instance), now: now)
        case .takeover(let instance, let takeover):
            // The only hold this backend hands a standby is the directory's lock.
            try StoreDatabase(
                directory: directory, store: store, claim: .takeover(instance: instance, lock: takeover.hold as? DirectoryLock, seen: takeover.seen),
                now: now)
        }
    }
}

extension SQLiteStorage {
    /// Copies the data directory `source` into `destination` as a consistent pair, while a store may run on it
    /// (``DataDirectoryBackup``), on a thread of its own; returns the watches copied.
    package static func backup(from source: URL, to destination: URL) async throws -> Int {
        try await withTaskExecutorPreference(PipelineExecutor(label: "restock.backup")) {
            try DataDirectoryBackup.copy(from: source, to: destination)
        }
    }

    /// Hands `line` every watch of the data directory `source` as a JSON line (``WatchExport``), read while a store may
    /// run on it, on a thread of its own; returns how many, and the rows it left out.
    package static func exportWatches(from source: URL, _ line: (Data) throws -> Void) async throws -> WatchExportCount {
        try await withTaskExecutorPreference(PipelineExecutor(label: "restock.export")) {
            try WatchExport.export(readingOnly: source, write: line)
        }
    }
}
