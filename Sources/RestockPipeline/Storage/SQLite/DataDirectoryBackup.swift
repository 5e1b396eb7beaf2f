import Foundation
import GRDB

/// `restock backup`: a consistent copy of a store's data directory, running or stopped, through SQLite's online
/// backup (docs/operations.md, "Backup and restore").
///
/// The two files must be a pair that ``PairCheck`` accepts: the state must not have applied more than the log holds,
/// nor less than the log has forgotten. Neither order of two independent copies guarantees that while the store
/// runs: the state copied first, the log can forget (trim) what that state had not applied before it is copied; the
/// log copied first, the state can apply requests the log copy never had. So the copy takes the log's write lock
/// (`BEGIN IMMEDIATE`: no append, no trim), opens its read transaction on the log, then on the state, and lets the lock
/// go — the two snapshots are then of one moment as far as the pair goes — and copies both from those transactions.
/// The lock is held for the time it takes to open two read transactions, not for the copy.
package enum DataDirectoryBackup {
    /// Copies the data directory `source` into `destination`, which must not exist or be empty; checks that the copy
    /// opens as a data directory. Blocking.
    /// - Returns: How many watches the copy holds.
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` when `source` holds no store or `destination` is not empty
    ///   (nothing is written then); a ``StorageError`` naming the file that could not be read or written, after
    ///   removing what was written.
    package static func copy(from source: URL, to destination: URL) throws -> Int {
        let from = DataDirectory(source.standardizedFileURL), to = DataDirectory(destination.standardizedFileURL)
        try refuseUnusable(from, to)
        let made = !FileManager.default.fileExists(atPath: to.url.path)
        do {
            try FileManager.default.createDirectory(at: to.url, withIntermediateDirectories: true)
            try copyPair(from, to)
            return try markRestored(to)
        } catch {
            // Nothing half made is left behind.
            if made {
                try? FileManager.default.removeItem(at: to.url)
            } else {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: to.url.path)) ?? [] {
                    try? FileManager.default.removeItem(at: to.url.appendingPathComponent(name))
                }
            }
            throw error
        }
    }

    private static func refuseUnusable(_ from: DataDirectory, _ to: DataDirectory) throws {
        for path in [from.statePath, from.logPath] where !FileManager.default.fileExists(atPath: path) {
            throw RestockMQTTError.backupRefused("\(from.url.path) holds no store's data (\(path) is missing): give --data the store's data directory")
        }
        guard to.url.path != from.url.path else {
            throw RestockMQTTError.backupRefused("\(to.url.path) is the data directory itself: give --to a new or empty directory")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: to.url.path, isDirectory: &isDirectory) else { return }
        let contents = isDirectory.boolValue ? try? FileManager.default.contentsOfDirectory(atPath: to.url.path) : nil
        guard contents?.isEmpty == true else {
            throw RestockMQTTError.backupRefused("\(to.url.path) exists and is not an empty directory: give --to a new or empty directory")
        }
    }

    /// Copies both files from snapshots of one moment (see the type's documentation).
    private static func copyPair(_ from: DataDirectory, _ to: DataDirectory) throws {
        let lock = try storageAccess(.open, from.logPath) {
            var configuration = Configuration()
            configuration.busyMode = .timeout(DataDirectory.busyTimeout)
            configuration.allowsUnsafeTransactions = true  // the lock spans the two snapshots' opening, not one closure
            return try DatabaseQueue(path: from.logPath, configuration: configuration)
        }
        guard let log = try from.openLogReadOnly() else { throw RestockMQTTError.backupRefused("\(from.logPath) is missing") }
        let state = try from.openStateReadOnly()
        let (logCopy, stateCopy) = (try queue(to.logPath), try queue(to.statePath))
        try storageAccess(.write, from.logPath) { try lock.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") } }
        var locked = true
        defer { if locked { try? lock.inDatabase { db in try db.execute(sql: "ROLLBACK") } } }
        try storageAccess(.read, from.logPath) {
            try log.read { logDB in
                _ = try Int.fetchOne(logDB, sql: "SELECT count(*) FROM sqlite_master")  // the log's snapshot begins here
                try storageAccess(.read, from.statePath) {
                    try state.read { stateDB in
                        _ = try Int.fetchOne(stateDB, sql: "SELECT count(*) FROM sqlite_master")  // and the state's here
                        try lock.inDatabase { db in try db.execute(sql: "ROLLBACK") }
                        locked = false
                        try storageAccess(.write, to.statePath) { try stateCopy.writeWithoutTransaction { try stateDB.backup(to: $0) } }
                    }
                }
                try storageAccess(.write, to.logPath) { try logCopy.writeWithoutTransaction { try logDB.backup(to: $0) } }
            }
        }
    }

    private static func queue(_ path: String) throws(StorageError) -> DatabaseQueue {
        try storageAccess(.open, path) { try DatabaseQueue(path: path) }
    }

    /// Opens the copy as the store would (its pair checked), and marks it as a backup: the store started on it makes
    /// the broker's retained state agree with it (``StoreDatabase/isRestored``), and it names no store process as the
    /// last to use it, so that the original, if it still runs, counts as another live instance.
    private static func markRestored(_ copy: DataDirectory) throws -> Int {
        let database = try StoreDatabase(directory: copy.url)
        try database.markRestored()
        return try database.queueLengths().watches
    }
}
