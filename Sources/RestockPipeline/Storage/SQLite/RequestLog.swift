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
    private let file: StorageFile

    /// The log's file.
    package var path: String { file.path }

    /// The log's file name in the data directory.
    package static let fileName = "journal.sqlite"

    /// Opens (creating if need be) the log in `directory`.
    package convenience init(directory: URL) throws {
        try self.init(DataDirectory(directory).openLog())
    }

    /// The log in `writer` (a `DatabaseQueue` in memory in the tests); makes its schema ready.
    /// - Parameters:
    ///   - path: The path errors name; the writer's own when `nil`.
    /// - Throws: ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)`` for a log written
    ///   by a newer version; a ``StorageError`` when it cannot be used.
    ///   - fence: The lease each write checks first (``StoreLease``); `nil` for none.
    init(_ writer: any DatabaseWriter, path: String? = nil, fence: LeaseFence? = nil) throws {
        let file = StorageFile(writer, path: path, fence: fence.map { ($0, .log) })
        self.file = file
        migration = try SchemaVersion.migrate(writer, with: Self.migrator, path: file.path)
    }

    /// The log in `pool`, opened read-only: its schema is left as it is.
    private init(readingOnly pool: DatabasePool) {
        file = StorageFile(pool)
        migration = nil
    }

    /// The migration that ran when the log was opened, if any.
    package let migration: SchemaVersion?

    /// The log of `directory` opened for reading while a store may write it; `nil` when there is none yet.
    static func readingOnly(_ directory: URL) throws(StorageError) -> RequestLog? {
        try DataDirectory(directory).openLogReadOnly().map { RequestLog(readingOnly: $0) }
    }

    /// Limits the log to `pages` pages of its file from now on (`nil`: no limit), as a full disk would: a write that
    /// needs more fails with `SQLITE_FULL`. For tests.
    package func limitSize(toPages pages: Int?) throws { try file.limitSize(toPages: pages) }

    /// How many pages the log's file holds now.
    package func pageCount() throws -> Int { try file.pageCount() }

    static var migrator: DatabaseMigrator {
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
    func identity() throws(StorageError) -> String {
        try file.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'id'") ?? "" }
    }

    /// Appends a request; returns its place in the log. Blocking, on purpose: the caller acknowledges the
    /// request only after this returns.
    package func append(topic: String, payload: [UInt8], size: Int, retained: Bool) throws(StorageError) -> Int64 {
        // One statement in SQLite's autocommit mode. The network thread appends every request: a cached
        // statement bound by position, without a record to encode by name first. Fenced by a lease, it is a transaction
        // that reads the epoch first.
        let insert = { (db: Database) throws -> Int64 in
            try db.cachedStatement(sql: Self.insert).execute(arguments: [topic, Data(payload), size, retained])
            return db.lastInsertedRowID
        }
        return try file.isFenced ? file.write(insert) : file.writeWithoutTransaction(insert)
    }

    /// Appends the requests of one read in one transaction (group commit): all are in the log when it returns, or
    /// none is. Returns their places, in order. Blocking, on purpose, as ``append(topic:payload:size:retained:)``.
    package func append(batch requests: [(topic: String, payload: [UInt8], size: Int, retained: Bool)]) throws(StorageError) -> [Int64] {
        guard requests.count > 1 else {
            return try requests.map { request throws(StorageError) in
                try append(topic: request.topic, payload: request.payload, size: request.size, retained: request.retained)
            }
        }
        return try file.write { db in
            let insert = try db.cachedStatement(sql: Self.insert)
            return try requests.map { request in
                try insert.execute(arguments: [request.topic, Data(request.payload), request.size, request.retained])
                return db.lastInsertedRowID
            }
        }
    }

    private static let insert: String = {
        typealias Columns = RequestRecord.Columns
        let columns = [Columns.topic, Columns.payload, Columns.size, Columns.retained].map(\.name)
        return "INSERT INTO \(RequestRecord.databaseTableName) (\(columns.joined(separator: ", "))) VALUES (?, ?, ?, ?)"
    }()

    /// Carries over requests journaled by an earlier version of the store (in `store.sqlite`), keeping their places.
    func adopt(_ requests: [JournaledRequest]) throws(StorageError) {
        guard !requests.isEmpty else { return }
        try file.write { db in
            for request in requests { try RequestRecord(request).insert(db, onConflict: .ignore) }
        }
    }

    /// The last place given out (entries trimmed since included); 0 before the first.
    func lastPlace() throws(StorageError) -> Int64 {
        try file.read { db in
            max(try Self.sequence(db) ?? 0, try RequestRecord.select(max(RequestRecord.Columns.seq), as: Int64.self).fetchOne(db) ?? 0)
        }
    }

    /// The last place SQLite has given out, trimmed or not (`sqlite_sequence`); `nil` before the first.
    private static func sequence(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [RequestRecord.databaseTableName])
    }

    /// Makes the next place given out come after `seq`.
    func `continue`(after seq: Int64) throws(StorageError) {
        guard seq > 0 else { return }
        try file.write { db in
            let table = RequestRecord.databaseTableName
            if let used = try Self.sequence(db) {
                if used < seq { try db.execute(sql: "UPDATE sqlite_sequence SET seq = ? WHERE name = ?", arguments: [seq, table]) }
            } else {
                try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", arguments: [table, seq])
            }
        }
    }

    /// The oldest requests after `seq`, in the order received (recovery at start-up).
    package func requests(after seq: Int64, limit: Int) throws(StorageError) -> [JournaledRequest] {
        try file.read { db in
            try RequestRecord.filter(RequestRecord.Columns.seq > seq).order(RequestRecord.Columns.seq).limit(limit).fetchAll(db)
                .map(\.request)
        }
    }

    /// The last place the log has forgotten (trimmed): every place up to it was applied by the store's state that
    /// the log was trimmed for. 0 when it has forgotten nothing.
    func forgottenThrough() throws(StorageError) -> Int64 {
        try file.read { db in
            if let first = try RequestRecord.select(min(RequestRecord.Columns.seq), as: Int64.self).fetchOne(db) { return first - 1 }
            return try Self.sequence(db) ?? 0
        }
    }

    /// Whether the log can be written again: writes and removes a row about the size of the largest request, each
    /// in a transaction of its own, so that SQLite needs room for both. Throws what the write throws.
    package func probe() throws(StorageError) {
        let filler = String(repeating: "x", count: 8 * 1024)
        try file.write { db in try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', ?)", arguments: [filler]) }
        try file.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'probe'") }
    }

    /// Makes every request appended so far survive a power cut: appends are committed without waiting for the disk,
    /// and the network thread syncs them here once it has passed them on to be applied, before it acknowledges them.
    package func sync() throws(StorageError) { try file.syncWriteAheadLog() }

    /// Forgets the entries up to `seq`: the store's state has recorded them as applied.
    package func trim(through seq: Int64) throws(StorageError) {
        try file.write { db in _ = try RequestRecord.filter(RequestRecord.Columns.seq <= seq).deleteAll(db) }
    }

    /// Checkpoints the log's WAL into it and truncates the WAL.
    package func checkpoint() throws(StorageError) { try file.checkpoint() }

    /// How many entries follow `seq`.
    package func count(after seq: Int64) throws(StorageError) -> Int {
        try file.read { db in try RequestRecord.filter(RequestRecord.Columns.seq > seq).fetchCount(db) }
    }
}

/// A row of the log's `request` table: a request as journaled, at its place.
struct RequestRecord: Codable, Hashable, FetchableRecord, PersistableRecord, JournaledRequestRow {
    static let databaseTableName = "request"

    var seq: Int64
    var topic: String
    var payload: Data
    /// The payload's size as received.
    var size: Int
    var retained: Bool

    typealias Columns = JournaledRequestColumns

    init(_ request: JournaledRequest) {
        seq = request.seq
        topic = request.topic
        payload = Data(request.payload)
        size = request.size
        retained = request.retained
    }
}
