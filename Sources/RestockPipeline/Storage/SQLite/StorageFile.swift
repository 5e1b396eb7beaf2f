import GRDB
import GRDBSQLite

/// One SQLite file of the data directory as the storage types use it: a connection to it (any GRDB
/// `DatabaseWriter`: a `DatabasePool` on the file, or a `DatabaseQueue` in memory in the tests) and the path its
/// errors name.
///
/// Every access goes through here, so that every failure is a ``StorageError`` that names the file and keeps what
/// SQLite said, and every write first passes `FaultInjection.failIfDiskFull(writing:)`. A fenced file (``LeaseFence``)
/// checks the lease's epoch inside each write transaction.
struct StorageFile: Sendable {
    /// The connection.
    let writer: any DatabaseWriter
    /// The file, as its errors name it.
    let path: String
    /// The lease every write transaction checks first, and where this file keeps its epoch; `nil`: unfenced.
    let fence: (LeaseFence, LeaseFence.File)?

    /// - Parameters:
    ///   - path: The path errors name; the writer's own (`:memory:` for a database in memory) when `nil`.
    ///   - fence: The lease each write transaction checks, and which file this is; `nil` for none.
    init(_ writer: any DatabaseWriter, path: String? = nil, fence: (LeaseFence, LeaseFence.File)? = nil) {
        self.writer = writer
        self.path = path ?? writer.path
        self.fence = fence
    }

    /// Reads the file; a failure names it.
    func read<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try storageAccess(.read, path) { try writer.read(body) }
    }

    /// Writes the file in one transaction; a failure names it and keeps SQLite's result code.
    func write<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try FaultInjection.failIfDiskFull(writing: path)
        guard let (lease, file) = fence else { return try storageAccess(.write, path) { try writer.write(body) } }
        // In the transaction, whose write lock a newer owner's acquisition needs too (GRDB's pools begin IMMEDIATE).
        return try storageAccess(.write, path) {
            try writer.write { db in
                try lease.check(db, file: file, path: path)
                return try body(db)
            }
        }
    }

    /// Writes the file in one transaction, as ``write(_:)``, whose commit syncs the file's write-ahead log before it
    /// returns (`synchronous=FULL` for it): it and every commit before it survive a power cut. The connection's own
    /// setting is back once it returns.
    func writeDurably<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        // The setting cannot change inside a transaction; the writer runs one write at a time, so no other commit
        // runs between these three but one from another thread, which is then synced too.
        try setSynchronous(.full)
        defer { try? setSynchronous(.normal) }
        return try write(body)
    }

    /// Syncs the file's write-ahead log to the disk, through SQLite's own file (and so its VFS): every commit made
    /// before it survives a power cut once it returns, as if each had been made with `synchronous=FULL`. Taken apart
    /// from the commit, so that a commit's work and its sync may overlap other work (``RequestLog/sync()``).
    func syncWriteAheadLog() throws(StorageError) {
        try storageAccess(.write, path) {
            try writer.writeWithoutTransaction { db in
                var file: UnsafeMutablePointer<sqlite3_file>?
                var result = sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file)
                // No write-ahead log open: nothing was written since the connection was opened.
                guard result == SQLITE_OK, let file, let sync = file.pointee.pMethods?.pointee.xSync else {
                    if result != SQLITE_OK { throw DatabaseError(resultCode: ResultCode(rawValue: result)) }
                    return
                }
                result = sync(file, SQLITE_SYNC_NORMAL)
                if result != SQLITE_OK { throw DatabaseError(resultCode: ResultCode(rawValue: result), message: "cannot sync the write-ahead log") }
            }
        }
    }

    private func setSynchronous(_ level: DataDirectory.Synchronous) throws(StorageError) {
        try storageAccess(.write, path) { try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(level.rawValue)") } }
    }

    /// Whether each write transaction checks the lease.
    var isFenced: Bool { fence != nil }

    /// Copies the write-ahead log into the file and truncates it to nothing (`PRAGMA wal_checkpoint(TRUNCATE)`), waiting
    /// for readers up to the busy timeout.
    func checkpoint() throws(StorageError) {
        try storageAccess(.write, path) {
            try writer.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        }
    }

    /// Writes the file outside a transaction: one statement then runs in SQLite's autocommit mode, a transaction of
    /// its own without BEGIN and COMMIT to run.
    func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try FaultInjection.failIfDiskFull(writing: path)
        return try storageAccess(.write, path) { try writer.writeWithoutTransaction(body) }
    }

    /// Limits the file to `pages` pages from now on (`nil`: no limit), as a full disk would: a write that needs more
    /// fails with `SQLITE_FULL`. For tests.
    func limitSize(toPages pages: Int?) throws(StorageError) {
        try storageAccess(.write, path) {
            try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = \(pages ?? 4_294_967_294)") }
        }
    }

    /// How many pages the file holds now.
    func pageCount() throws(StorageError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 }
    }
}
