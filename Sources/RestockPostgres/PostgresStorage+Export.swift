import Foundation
import RestockCore
import RestockPipeline

extension PostgresStorage {
    /// `restock export --database`: every watch of `store` through `write`, a JSON line each (``WatchExportLine``, as from
    /// a data directory), in position order, read in one snapshot of the database (a read-only, repeatable-read
    /// transaction) on a thread of its own. It takes no lease and writes nothing: safe while the store runs.
    /// - Returns: How many watches it wrote.
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` when the database holds no state of `store`; a newer schema's
    ///   refusal; a ``StorageError`` naming the database when it cannot be read; what `write` throws.
    package func exportWatches(of store: StoreID, _ write: (Data) throws -> Void) async throws -> Int {
        try await withTaskExecutorPreference(PipelineExecutor(label: "restock.export")) {
            let session = PostgresSession(settings: settings)
            defer { session.disconnect() }
            try PostgresSchema.check(try session.run(.open, PostgresSchema.version), location: location)
            let watches = try session.transaction(.read, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { statements in
                let known = try statements.query("SELECT to_regclass('restock_lease') IS NOT NULL").first?.decode(Bool.self) == true
                    && !(try statements.query("SELECT 1 FROM restock_lease WHERE store = \(store.rawValue)").isEmpty)
                // The restore's own reading: a row that holds no valid watch is left out, as the store leaves it out.
                return known ? try PostgresStateReader(statements: statements, store: store.rawValue).snapshot().snapshot.watches : nil
            }
            guard let watches else {
                throw RestockMQTTError.backupRefused("\(location) holds no state of store \(store): has `restock serve --store \(store) --database …` run on it?")
            }
            return try WatchExportLine.write(watches, of: store.rawValue, to: write)
        }
    }
}
