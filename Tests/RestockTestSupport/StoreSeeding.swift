import RestockPipeline
import Foundation
import RestockCore
import RestockMQTT

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

    /// Opens the database in `directory` and rebuilds the store from it, as a restart does in process.
    public static func restore(_ store: StoreID, from directory: URL) throws -> Store {
        let database = try StoreDatabase(directory: directory)
        return try Store(id: store, restoring: try database.loadSnapshot())
    }
}
