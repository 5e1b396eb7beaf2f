import Foundation
import GRDB

/// The write-ahead log of requests: `journal.sqlite` in the data directory, a file of its own beside the
/// store's state (`store.sqlite`).
///
/// libmosquitto's network thread appends each request here before it acknowledges it, and never waits for a
/// commit of the store's state: the two files have a writer each. The store's own transaction records how far
/// the log has been applied (``StoreDatabase/processedThrough()``), so a request is applied exactly once
/// whatever stopped the process; applied entries are trimmed from the log afterwards. The log is read back
/// only at start-up, to recover what was journaled but not yet applied.
package final class RequestLog: Sendable {
    private let pool: DatabasePool
    /// The log's file.
    package let path: String

    package static let fileName = "journal.sqlite"

    /// Opens (creating if need be) the log in `directory`.
    package init(directory: URL) throws(StorageError) {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        let path = directory.appendingPathComponent(Self.fileName).path
        self.path = path
        pool = try storageAccess(.open, path) {
            let pool = try DatabasePool(path: path, configuration: configuration)
            try Self.migrator.migrate(pool)
            return pool
        }
    }

    private init(readingOnly directory: URL) throws {
        var configuration = Configuration()
        configuration.readonly = true
        path = directory.appendingPathComponent(Self.fileName).path
        pool = try DatabasePool(path: path, configuration: configuration)
    }

    /// Reads the log; a failure names the file.
    private func read<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try storageAccess(.read, path) { try pool.read(body) }
    }

    /// Writes the log in one transaction; a failure names the file and keeps SQLite's result code.
    private func write<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try FaultInjection.failIfDiskFull(writing: path)
        return try storageAccess(.write, path) { try pool.write(body) }
    }

    /// Limits the log to `pages` pages of its file from now on (`nil`: no limit), as a full disk would: a write that
    /// needs more fails with `SQLITE_FULL`. For tests.
    package func limitSize(toPages pages: Int?) throws {
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = \(pages ?? 4_294_967_294)") }
    }

    /// How many pages the log's file holds now.
    package func pageCount() throws -> Int { try pool.read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 } }

    /// The log of `directory` opened for reading while a store may write it; `nil` when there is none yet.
    static func readingOnly(_ directory: URL) throws -> RequestLog? {
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent(fileName).path) else { return nil }
        return try RequestLog(readingOnly: directory)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // `size` is the payload's size as received (only its first bytes are kept).
            try db.execute(
                sql: """
                    CREATE TABLE request (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, payload BLOB NOT NULL,
                        size INTEGER NOT NULL, retained INTEGER NOT NULL);
                    """)
        }
        migrator.registerMigration("v2: identity") { db in
            // A log made anew (deleted, emptied, replaced) has another identity than the one the store's state
            // was written with: the store refuses it rather than lose what the old one held.
            try db.execute(sql: "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('id', ?)", arguments: [UUID().uuidString])
        }
        return migrator
    }

    /// The log's identity, given when it was made.
    func identity() throws -> String {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'id'") ?? "" }
    }

    /// Appends a request; returns its place in the log. Blocking, on purpose: the caller acknowledges the
    /// request only after this returns.
    package func append(topic: String, payload: [UInt8], size: Int, retained: Bool) throws -> Int64 {
        // One statement in SQLite's autocommit mode: a transaction of its own, without BEGIN and COMMIT to run.
        try FaultInjection.failIfDiskFull(writing: path)
        return try storageAccess(.write, path) {
            try pool.writeWithoutTransaction { db in
                try db.cachedStatement(sql: "INSERT INTO request (topic, payload, size, retained) VALUES (?, ?, ?, ?)")
                    .execute(arguments: [topic, Data(payload), size, retained])
                return db.lastInsertedRowID
            }
        }
    }

    /// Carries over requests journaled by an earlier version of the store (in `store.sqlite`), keeping their places.
    func adopt(_ requests: [JournaledRequest]) throws {
        guard !requests.isEmpty else { return }
        try write { db in
            let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO request (seq, topic, payload, size, retained) VALUES (?, ?, ?, ?, ?)")
            for request in requests {
                try insert.execute(arguments: [request.seq, request.topic, Data(request.payload), request.size, request.retained])
            }
        }
    }

    /// The last place given out (entries trimmed since included); 0 before the first.
    func lastPlace() throws -> Int64 {
        try read { db in
            max(
                try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'request'") ?? 0,
                try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM request") ?? 0)
        }
    }

    /// Makes the next place given out come after `seq`.
    func `continue`(after seq: Int64) throws {
        guard seq > 0 else { return }
        try write { db in
            let used = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'request'")
            if let used {
                if used < seq { try db.execute(sql: "UPDATE sqlite_sequence SET seq = ? WHERE name = 'request'", arguments: [seq]) }
            } else {
                try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('request', ?)", arguments: [seq])
            }
        }
    }

    /// The oldest requests after `seq`, in the order received (recovery at start-up).
    package func requests(after seq: Int64, limit: Int) throws -> [JournaledRequest] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT seq, topic, payload, size, retained FROM request WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [seq, limit]
            ).map { JournaledRequest(seq: $0[0], topic: $0[1], payload: Array($0[2] as Data), size: $0[3], retained: $0[4]) }
        }
    }

    /// The last place the log has forgotten (trimmed): every place up to it was applied by the store's state that
    /// the log was trimmed for. 0 when it has forgotten nothing.
    func forgottenThrough() throws(StorageError) -> Int64 {
        try read { db in
            if let first = try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM request") { return first - 1 }
            return try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'request'") ?? 0
        }
    }

    /// Whether the log can be written again: writes and removes a row about the size of the largest request, each
    /// in a transaction of its own, so that SQLite needs room for both. Throws what the write throws.
    package func probe() throws(StorageError) {
        let filler = String(repeating: "x", count: 8 * 1024)
        try write { db in try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', ?)", arguments: [filler]) }
        try write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'probe'") }
    }

    /// Forgets the entries up to `seq`: the store's state has recorded them as applied.
    package func trim(through seq: Int64) throws {
        try write { db in try db.execute(sql: "DELETE FROM request WHERE seq <= ?", arguments: [seq]) }
    }

    /// How many entries follow `seq`.
    package func count(after seq: Int64) throws -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM request WHERE seq > ?", arguments: [seq]) ?? 0 }
    }
}
