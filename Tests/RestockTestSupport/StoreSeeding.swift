import RestockPipeline
import Foundation
import RestockCore
import RestockMQTT
import RestockPostgres

/// A store's data directory written straight through its database, for benchmarks and tests that start from
/// a large state without sending a request for each watch (the database is the library's own plumbing:
/// `package`, reached from here).
public enum StoreSeeding {
    /// Writes `watches` into a new database in `directory`, with the position counter after the last of them.
    public static func write(_ watches: [Watch], into directory: URL) throws {
        let database = try StoreDatabase(directory: directory)
        var changes = StoreChanges()
        for watch in watches { changes.save(watch) }
        changes.counters = ((watches.map(\.position).max() ?? 0) + 1, 1)
        try database.commit(changes)
    }

    /// Writes `watches` as store `store`'s into the PostgreSQL database at `url` (`postgres://…`), with the position counter
    /// after the last of them, under a lease it releases after: the store started next takes it at once.
    public static func write(_ watches: [Watch], intoDatabase url: String, store: StoreID) throws {
        let backend = PostgresStorage(settings: PostgresSettings(try DatabaseURL(parsing: url)))
        let storage = try backend.open(for: store, claim: .exclusive(instance: "5eed5eed5eed"), now: Date())
        var changes = StoreChanges()
        for watch in watches { changes.save(watch) }
        changes.counters = ((watches.map(\.position).max() ?? 0) + 1, 1)
        try storage.commit(changes)
        storage.ownership.release()
        storage.releaseDirectory()
    }

    /// Opens the database in `directory` and rebuilds the store from it, as a restart does in process.
    public static func restore(_ store: StoreID, from directory: URL) throws -> Store {
        let database = try StoreDatabase(directory: directory)
        return try Store(id: store, restoring: try database.loadSnapshot())
    }
}
