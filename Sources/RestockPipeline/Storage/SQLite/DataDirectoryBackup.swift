import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

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
    ///
    /// The copy is made in a folder of its own beside `destination` (`.NAME.restock-backup-PID`) and renamed to it once
    /// whole: a backup that fails or is killed leaves nothing at `destination` that a store would start on (found by
    /// an outside trial: a backup killed after 1.5 s left a cut copy there, which `restock serve` took as an empty
    /// store). What a killed backup left beside it is removed by the next backup to the same place.
    /// - Returns: How many watches the copy holds.
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` when `source` holds no store or one of a newer version, or
    ///   `destination` is inside it or not empty (nothing is written then); a ``StorageError`` naming the file that could
    ///   not be read or written, after removing what was written.
    package static func copy(from source: URL, to destination: URL) throws -> Int {
        let from = DataDirectory(source.standardizedFileURL), to = DataDirectory(followingLink(destination.standardizedFileURL))
        try refuseUnusable(from, to)
        let parent = to.url.deletingLastPathComponent()
        let prefix = stagingPrefix(for: to.url.lastPathComponent)
        removeLeftBehind(in: parent, prefix: prefix)
        let staging = DataDirectory(parent.appendingPathComponent(prefix + "\(getpid())"))
        do {
            do {
                try FileManager.default.createDirectory(at: staging.url, withIntermediateDirectories: true)
            } catch {
                throw StorageError(.write, staging.url.path, cause: (error as NSError).userInfo[NSUnderlyingErrorKey] as? any Error ?? error)
            }
            try copyPair(from, staging)
            let watches = try markRestored(staging)
            // rename(2) puts a directory in the place of an empty one too, which keeps its mode, owner and group (a
            // folder an operator made for the copy, private to a backup user, stays so).
            var given = stat()
            if stat(to.url.path, &given) == 0 {
                _ = chmod(staging.url.path, given.st_mode & 0o7777)
                _ = chown(staging.url.path, given.st_uid, given.st_gid)  // as root; another user keeps its own
            }
            guard rename(staging.url.path, to.url.path) == 0 else { throw StorageError.system(.write, to.url.path, errno: errno) }
            let folder = open(parent.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if folder >= 0 {
                _ = fsync(folder)
                close(folder)
            }
            return watches
        } catch {
            try? FileManager.default.removeItem(at: staging.url)
            throw error
        }
    }

    /// The name of the folder a copy to `name` is made in, but the process id: `.NAME.restock-backup-`, with `NAME` cut
    /// (at a character) so that the whole name, with any process id, is one a file system takes (a destination named
    /// with 234–255 bytes was refused as too long, naming this folder: found by an outside trial).
    static func stagingPrefix(for name: String) -> String {
        let fixed = ".".utf8.count + ".restock-backup-".utf8.count + "\(Int32.max)".utf8.count
        var kept = Substring(name)
        while kept.utf8.count > DataDirectory.longestName - fixed { kept.removeLast() }
        return ".\(kept).restock-backup-"
    }

    /// `destination`'s target when it is a symbolic link to a directory: the copy is renamed into the place of an empty
    /// one, and a link there is not one (a link to an empty directory was refused with "Not a directory": an outside
    /// trial). Any other path as it is: a link that leads nowhere is refused by name when the path is checked.
    static func followingLink(_ destination: URL) -> URL {
        var info = stat(), target = stat()
        guard lstat(destination.path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK, stat(destination.path, &target) == 0,
            target.st_mode & S_IFMT == S_IFDIR, let resolved = realpath(destination.path, nil)
        else { return destination }
        defer { free(resolved) }
        return URL(fileURLWithPath: String(cString: resolved))
    }

    /// Removes the folders `prefix` + a process id in `parent` whose process no longer runs: what killed backups left.
    private static func removeLeftBehind(in parent: URL, prefix: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(at: parent.appendingPathComponent(name))
        }
    }

    private static func refuseUnusable(_ from: DataDirectory, _ to: DataDirectory) throws {
        try from.refuseNonDirectory(option: "--data")
        try from.checkPath(.open)
        // The copy is made in the folder beside the destination, whose name may be longer (by the longest process id, so
        // that the limit said does not move from one run to the next): SQLite must open it there too.
        let staging = stagingPrefix(for: to.url.lastPathComponent) + "\(Int32.max)"
        try to.checkPath(.write, extra: max(0, staging.utf8.count - to.url.lastPathComponent.utf8.count))
        let shown = StoredValues.inLine(from.url.path)
        for path in [from.statePath, from.logPath] {
            var status = stat()
            if stat(path, &status) == 0 { continue }
            if errno == ENOENT || errno == ENOTDIR {
                throw RestockMQTTError.backupRefused(
                    "\(shown) holds no store's data (\(StoredValues.inLine(path)) is missing): give --data the store's data directory")
            }
            throw StorageError.system(.read, path, errno: errno)  // permission denied: said as it is
        }
        // A store of a newer version is refused before anything is copied, named as the source (it was named as the
        // copy, found by an outside trial).
        try SchemaVersion.refuseNewer(try from.openStateReadOnly(), than: StateSchema.migrator, path: from.statePath)
        if let log = try from.openLogReadOnly() { try SchemaVersion.refuseNewer(log, than: RequestLog.migrator, path: from.logPath) }
        // By the folders' identity: a copy inside the data directory (by any path, a bind mount's too) would go with it.
        guard !FolderIdentity.isInside(to.url.path, folder: from.url.path) else {
            throw RestockMQTTError.backupRefused(
                "\(StoredValues.inLine(to.url.path)) is inside the data directory \(shown) (or is it): give --to a new or empty directory elsewhere")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: to.url.path, isDirectory: &isDirectory) else { return }
        let contents = isDirectory.boolValue ? try? FileManager.default.contentsOfDirectory(atPath: to.url.path) : nil
        guard contents?.isEmpty == true else {
            throw RestockMQTTError.backupRefused(
                "\(StoredValues.inLine(to.url.path)) exists and is not an empty directory: give --to a new or empty directory")
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
