import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif
import RestockCore

/// `restock export`: every watch of a store's data directory as JSON Lines, for a shop's own systems
/// (docs/operations.md, "Exporting the watches"). It opens `store.sqlite` read-only, as a WAL reader, without the
/// directory's lock: a running store is neither blocked nor changed, and the lines are one consistent snapshot (one read
/// transaction), in position order.
package enum WatchExport {
    /// Writes every watch of the data directory `directory` through `write`, a line (with its newline) at a time.
    /// - Returns: How many watches it wrote, and a description of each row of the watch table it left out.
    /// - Throws: ``RestockMQTTError/backupRefused(_:)``-like one-line errors through ``StorageError`` when the directory
    ///   holds no store's state; what `write` throws.
    package static func export(readingOnly directory: URL, write: (Data) throws -> Void) throws -> WatchExportCount {
        try DataDirectory(directory).refuseNonDirectory(option: "--data")
        // A link that leads nowhere is named as such, as backup names it (it read "holds no store's state").
        try DataDirectory(directory).checkPath(.open)
        var status = stat()
        guard stat(directory.appendingPathComponent(DataDirectory.stateFileName).path, &status) == 0 else {
            // A directory it may not read is said as such (found by an outside trial: it read "holds no store's state").
            guard errno == ENOENT || errno == ENOTDIR else {
                throw StorageError.system(.read, directory.appendingPathComponent(DataDirectory.stateFileName).path, errno: errno)
            }
            throw RestockMQTTError.backupRefused("\(directory.path) holds no store's state (\(DataDirectory.stateFileName)): is it a data directory of `restock serve`?")
        }
        // SQLite would wait forever opening a FIFO (found by an outside trial): the state must be a file.
        let state = directory.appendingPathComponent(DataDirectory.stateFileName).resolvingSymlinksInPath().path
        guard (try? FileManager.default.attributesOfItem(atPath: state)[.type] as? FileAttributeType) == .typeRegular else {
            throw RestockMQTTError.backupRefused("\(state) is not a file: is \(directory.path) a data directory of `restock serve`?")
        }
        let data = DataDirectory(directory)
        try data.checkPath(.open)
        let pool = try data.openStateReadOnly()
        // A state of a newer version is refused, as `restock serve` refuses it (found by an outside trial: one of
        // user_version 99 was exported).
        try SchemaVersion.refuseNewer(pool, than: StateSchema.migrator, path: pool.path)
        return try storageAccess(.read, pool.path) {
            try pool.read { db in
                let store = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'store'") ?? ""
                // The restore's own reading: a row that holds no valid record (a watch, an on-hand quantity, a counter)
                // is left out and named, as the store leaves it out and names it at start (found by an outside trial:
                // the export named the watches' rows only, and its count differed from the store's).
                let (snapshot, skipped) = try StateReader.snapshot(db) { try WatchTable.load($0, skipped: &$1) }
                return WatchExportCount(written: try WatchExportLine.write(snapshot.watches, of: store, to: write), leftOut: skipped)
            }
        }
    }
}
