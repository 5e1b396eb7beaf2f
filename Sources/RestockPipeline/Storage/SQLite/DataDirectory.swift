import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// A store's data directory: where its files are, its lock, and the connections to its two SQLite files — the
/// store's state (`store.sqlite`) and the request log (`journal.sqlite`, ``RequestLog``) — which the storage types
/// then take as GRDB `DatabaseWriter`s.
///
/// Both files use WAL mode and `synchronous=NORMAL`: a commit survives the process being killed, and a power cut may
/// take the last ones. The request log's commits are synced by a call of their own (``RequestLog/sync()``), which the
/// network thread makes while the requests are applied and before the broker is told they arrived: an acknowledged
/// request survives a power cut. The state's last commits, which a power cut may take, the log still holds (its trim
/// waits for a commit of the state made durable, ``StoreChanges/durable``).
struct DataDirectory: Sendable {
    /// The directory.
    let url: URL

    /// The store's state's file name.
    static let stateFileName = "store.sqlite"
    /// The file of the requests being applied (``AttemptRecord``).
    static let attemptFileName = "attempt"

    init(_ url: URL) {
        self.url = url
    }

    /// The path of the store's state.
    var statePath: String { path(Self.stateFileName) }
    /// The path of the request log.
    var logPath: String { path(RequestLog.fileName) }

    private func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Creates the directory if need be, and takes its lock for the life of the process.
    /// - Throws: ``RestockMQTTError/dataDirectoryInUse(_:)`` when another store process holds it.
    func claim() throws -> DirectoryLock {
        try prepare()
        return try DirectoryLock(directory: url)
    }

    /// Creates the directory if need be and checks that a store can use it: a directory (not a file, not under one) whose
    /// lock file it may open for writing. What a store's start checks first, and a standby before it waits.
    func prepare() throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            // Foundation would say "a file with the same name already exists" (found by the outside trial).
            throw StorageError(.open, url.path, cause: POSIXError(.ENOTDIR))
        }
        try checkPath(.open)
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            // A file where a parent directory should be: Foundation says only "error 512" (found by an outside trial).
            var parent = url.deletingLastPathComponent()
            while parent.path != "/", !FileManager.default.fileExists(atPath: parent.path) { parent.deleteLastPathComponent() }
            if FileManager.default.fileExists(atPath: parent.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                throw StorageError(.open, url.path, cause: POSIXError(.ENOTDIR))
            }
            throw StorageError(.open, url.path, cause: error)
        }
        let lockPath = url.appendingPathComponent(DirectoryLock.fileName).path
        let descriptor = Glibc.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw StorageError.system(.open, lockPath, errno: errno) }
        close(descriptor)
    }

    /// Whether a store process holds the directory's lock now.
    var isInUse: Bool { DirectoryLock.isHeld(on: url) }

    /// Opens (creating if need be) the store's state for reading and writing; its schema is the caller's to prepare.
    func openState() throws(StorageError) -> DatabasePool { try open(statePath, synchronous: .normal) }

    /// Opens (creating if need be) the request log for reading and writing.
    func openLog() throws(StorageError) -> DatabasePool { try open(logPath, synchronous: .normal) }

    /// Opens the store's state read-only, without the lock, while a store may be running on it (WAL readers never
    /// block the writer).
    func openStateReadOnly() throws(StorageError) -> DatabasePool { try open(statePath, readOnly: true) }

    /// Opens the request log read-only, as ``openStateReadOnly()``; `nil` when there is none yet.
    func openLogReadOnly() throws(StorageError) -> DatabasePool? {
        guard FileManager.default.fileExists(atPath: logPath) else { return nil }
        return try open(logPath, readOnly: true)
    }

    /// How long an access waits for a lock another process holds on a file (`sqlite3` with a transaction open, a
    /// backup) before it fails with `SQLITE_BUSY`, which the running store takes as a pause (``StorageError/isRetriable``).
    static let busyTimeout: TimeInterval = 5
    /// The longest name of one file or directory Linux file systems take, in bytes (`NAME_MAX`).
    static let longestName = 255
    /// The longest path of a data directory, in bytes: SQLite opens no file whose path is longer than 512 bytes (its unix
    /// files' `MAX_PATHNAME`), and the longest file name in the directory is `journal.sqlite-journal`, after a slash.
    static let longestPath = 512 - 1 - "\(RequestLog.fileName)-journal".utf8.count

    /// Refuses, before anything is made, a path no store could use: a name longer than a file system takes (Foundation
    /// says only "The file name is invalid.", after making the parents: found by an outside trial with a name of 300
    /// characters); a path whose real path — links resolved — is longer than SQLite opens, with `extra` bytes more for
    /// what is made beside it (SQLite said "unable to open database file (SQLite error 14)", after the directory and
    /// its lock were made, and a standby waited on it for ever: the same trial; through a link to a long path too: a
    /// second trial); or a symbolic link on the way that leads nowhere, a loop or a missing target (Foundation said "A
    /// file with the same name already exists").
    /// - Throws: a ``StorageError`` of `action` naming the path.
    func checkPath(_ action: StorageError.Action, extra: Int = 0) throws(StorageError) {
        if url.pathComponents.contains(where: { $0.utf8.count > Self.longestName }) {
            throw StorageError(action, url.path, cause: POSIXError(.ENAMETOOLONG))
        }
        let real = try realPath(action)
        let limit = Self.longestPath - extra
        if real.utf8.count > limit {
            throw StorageError(action, url.path, cause: PathTooLong(length: real.utf8.count, limit: limit, real: real == url.path ? nil : real))
        }
    }

    /// The path as the system reaches it: its deepest part that exists, with every link resolved (`realpath`), then the
    /// rest as given.
    private func realPath(_ action: StorageError.Action) throws(StorageError) -> String {
        var existing = url.pathComponents
        var rest: [String] = []
        while existing.count > 1 {
            let path = NSString.path(withComponents: existing)
            var info = stat()
            if lstat(path, &info) != 0 {
                // A loop of links on the way says so here (ELOOP); a part that does not exist is made later.
                guard errno == ENOENT else { throw StorageError.system(action, url.path, errno: errno) }
                rest.insert(existing.removeLast(), at: 0)
                continue
            }
            var target = stat()
            if info.st_mode & S_IFMT == S_IFLNK, stat(path, &target) != 0 {
                guard errno == ENOENT else { throw StorageError.system(action, url.path, errno: errno) }
                let points = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map(StoredValues.inLine) ?? "?"
                throw StorageError(action, url.path, cause: DanglingLink(link: StoredValues.inLine(path), target: points))
            }
            guard let resolved = realpath(path, nil) else { throw StorageError.system(action, url.path, errno: errno) }
            defer { free(resolved) }
            return NSString.path(withComponents: [String(cString: resolved)] + rest)
        }
        return url.path
    }

    /// Refuses a path that is there and is not a directory (a file given as `--data` read "holds no store's data",
    /// which sent the operator looking for files in it: an outside trial).
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` naming the path and `option`.
    func refuseNonDirectory(option: String) throws {
        var info = stat()
        guard stat(url.path, &info) == 0, info.st_mode & S_IFMT != S_IFDIR else { return }
        throw RestockMQTTError.backupRefused("\(StoredValues.inLine(url.path)) is not a directory: give \(option) the store's data directory")
    }

    /// A symbolic link on a data directory's path to a path that does not exist.
    struct DanglingLink: LocalizedError {
        let link: String
        let target: String
        var errorDescription: String? {
            "\(link) is a symbolic link to \(target), which does not exist: make that directory, or give a path without the link"
        }
    }

    /// A data directory's path longer than SQLite takes (``longestPath``).
    struct PathTooLong: LocalizedError {
        let length: Int
        let limit: Int
        /// The path with its links resolved, when it differs from the path given.
        let real: String?
        var errorDescription: String? {
            let what = real.map { "its real path (\(StoredValues.inLine($0))) is" } ?? "the path is"
            return "\(what) \(length) bytes long, and SQLite opens files only in a directory of at most \(limit) bytes: give a shorter path"
        }
    }

    /// SQLite's `synchronous` setting of a file's writer: what a commit waits for.
    enum Synchronous: String {
        /// The write-ahead log is synced at checkpoints only: a commit survives the process, not a power cut.
        case normal = "NORMAL"
        /// Every commit syncs the write-ahead log before it returns.
        case full = "FULL"
    }

    private func open(_ path: String, readOnly: Bool = false, synchronous: Synchronous = .normal) throws(StorageError) -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(Self.busyTimeout)
        if readOnly {
            configuration.readonly = true
        } else {
            // secure_delete: deleted rows are overwritten, so a forgotten customer's bytes do not linger in free space
            // (docs/operations.md, "Forgetting a customer").
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = ON") }
        }
        return try storageAccess(.open, path) {
            let pool = try DatabasePool(path: path, configuration: configuration)
            // On the writer, after the pool has set its WAL mode (GRDB sets NORMAL then, over any earlier setting).
            if !readOnly { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)") } }
            return pool
        }
    }
}
