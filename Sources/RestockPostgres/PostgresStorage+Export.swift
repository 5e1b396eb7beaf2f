import Foundation
import RestockCore
import RestockPipeline

extension PostgresStorage {
    /// `restock export --database`: every watch of `store` through `write`, a JSON line each (``WatchExportLine``, as from
    /// a data directory), in position order, read in one snapshot of the database (``snapshot(of:)``) on a thread of its
    /// own. It takes no lease and writes nothing: safe while the store runs.
    /// - Returns: How many watches it wrote, and a description of each row it left out (any row of the store's state that
    ///   holds no valid record, as the store's start leaves it out).
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` when the database holds no state of `store`; a newer schema's
    ///   refusal; a ``StorageError`` naming the database when it cannot be read; what `write` throws.
    package func exportWatches(of store: StoreID, _ write: (Data) throws -> Void) async throws -> WatchExportCount {
        try await withTaskExecutorPreference(PipelineExecutor(label: "restock.export")) {
            guard let (snapshot, skipped) = try reading(store, { try $0.snapshot() }) else {
                throw RestockMQTTError.backupRefused("\(location) holds no state of store \(store): has `restock serve --store \(store) --database …` run on it?")
            }
            return WatchExportCount(written: try WatchExportLine.write(snapshot.watches, of: store.rawValue, to: write), leftOut: skipped)
        }
    }

    /// The state of `store` as its restore reads it (a row that holds no valid watch left out), in one snapshot of the
    /// database (a read-only, repeatable-read transaction), without the lease; `nil` when the database holds no state of
    /// it. It blocks on the database: call it off Swift's cooperative pool.
    package func snapshot(of store: StoreID) throws -> StoreSnapshot? {
        try reading(store) { try $0.snapshot().snapshot }
    }

    /// How many requests of `store` wait in the journal, messages in its outbox, and watches in its state, read as
    /// ``snapshot(of:)``; `nil` when the database holds no state of it.
    package func queueLengths(of store: StoreID) throws -> (inbox: Int, outbox: Int, watches: Int)? {
        try reading(store) { try $0.queueLengths() }
    }

    /// `body` on a reader of `store`'s rows in one read-only snapshot, on a session of its own; `nil` without its lease row.
    private func reading<T>(_ store: StoreID, _ body: (PostgresStateReader) throws -> T) throws -> T? {
        let session = PostgresSession(settings: settings)
        defer { session.disconnect() }
        try PostgresSchema.check(try session.run(.open, PostgresSchema.version), location: location)
        return try session.transaction(.read, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { statements in
            let known = try statements.query("SELECT to_regclass('restock_lease') IS NOT NULL").first?.decode(Bool.self) == true
                && !(try statements.query("SELECT 1 FROM restock_lease WHERE store = \(store.rawValue)").isEmpty)
            return known ? try body(PostgresStateReader(statements: statements, store: store.rawValue)) : nil
        }
    }
}
