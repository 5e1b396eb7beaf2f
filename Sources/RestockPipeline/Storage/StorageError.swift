import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure of the store's storage: which file (or database), what was being done with it, its ``Kind``, and the cause
/// as the backend or the system gave it (kept as `any Error`: no backend's type is part of this API; a backend's own
/// errors say their kind as a ``StorageFailure``).
///
/// ``isRetriable`` is the one place that decides whether trying again can help: a full disk, a file another process
/// holds locked, an I/O error may pass by themselves; a damaged file and a lost lease will not. The running store
/// pauses on the first and resumes when its files can be written again (docs/operations.md, "A full disk"); it stops
/// on the second — after a lost lease without draining or saying offline (docs/operations.md, "Standby and takeover").
public struct StorageError: Error, CustomStringConvertible {
    /// What the store was doing with the file.
    public enum Action: String, Sendable {
        case open, read, write
    }

    /// What kind of failure it is, which decides whether it may pass (``isRetriable``).
    public enum Kind: String, Sendable, CaseIterable {
        /// The file cannot be used for now: an I/O error, a file system remounted read-only, no memory or descriptors.
        case unavailable
        /// The disk (or the file system's quota) is full.
        case full
        /// Another process holds the file locked beyond the busy timeout.
        case locked
        /// The file is damaged, not a database, or holds what this version cannot use.
        case corrupt
        /// A newer owner holds the data directory's lease (``StoreLease``): this process may write nothing more.
        case leaseLost
    }

    /// The lease on the data directory is held by a newer owner.
    public struct LeaseLost: Error, Sendable, Equatable {
        /// The instance that holds the lease now.
        public let owner: String
        /// Its epoch (the fencing token), higher than the one this process held.
        public let epoch: Int64
    }

    /// The file, as a path.
    public let path: String
    /// What the store was doing with it.
    public let action: Action
    /// What the backend or the system said: the backend's error (SQLite's), a `POSIXError`, or a ``LeaseLost``.
    public let cause: any Error

    /// A failure to do `action` with the file at `path`, for `cause`.
    package init(_ action: Action, _ path: String, cause: any Error) {
        self.action = action
        self.path = path
        self.cause = cause
    }

    /// A failed system call on `path`, from the `errno` it left.
    package static func system(_ action: Action, _ path: String, errno code: Int32) -> StorageError {
        StorageError(action, path, cause: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO))
    }

    /// A write to `path` refused because `owner` holds the lease now, at `epoch`.
    package static func leaseLost(_ path: String, owner: String, epoch: Int64) -> StorageError {
        StorageError(.write, path, cause: LeaseLost(owner: owner, epoch: epoch))
    }

    /// The backend's own error, when the backend refused.
    private var failure: (any StorageFailure)? { cause as? any StorageFailure }

    /// The system's error number, when a system call failed (also one Foundation wrapped in an `NSError`).
    public var errno: Int32? {
        if cause is LeaseLost { return nil }
        if let posix = cause as? POSIXError { return posix.code.rawValue }
        let error = cause as NSError
        if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return Int32(underlying.code)
        }
        return nil
    }

    /// What kind of failure it is.
    public var kind: Kind {
        if cause is LeaseLost { return .leaseLost }
        if let failure { return failure.kind(at: path) }
        if let errno {
            if [ENOSPC, EDQUOT].contains(errno) { return .full }
            if [EAGAIN, EWOULDBLOCK].contains(errno) { return .locked }
            if [EIO, EINTR, ENOMEM, EROFS, EMFILE, ENFILE].contains(errno) { return .unavailable }
        }
        return .corrupt
    }

    /// Whether trying the same again later can succeed: the disk is full, the file is locked by another process, or it
    /// is unavailable for now (an I/O error, a file system remounted read-only). A damaged or foreign file is not, nor
    /// a lost lease. The one place that decides retries: every stage asks this.
    public var isRetriable: Bool {
        switch kind {
        case .unavailable, .full, .locked: true
        case .corrupt, .leaseLost: false
        }
    }

    /// Whether the backend refused the data it was given (a value, a constraint), which a request may have caused; not a
    /// permission, a damaged file, a lost lease or a system call's failure (see ``StorageFailure/refusesTheData``).
    package var refusesTheData: Bool { failure?.refusesTheData ?? false }

    /// The lease's new holder, when a newer owner holds it (``Kind/leaseLost``).
    public var leaseLost: LeaseLost? { cause as? LeaseLost }

    /// Whether the disk (or the file system's quota) is full.
    public var isDiskFull: Bool { kind == .full }

    /// Whether another process holds the file locked (beyond the busy timeout).
    public var isLocked: Bool { kind == .locked }

    /// Why, in a few words: "the disk is full", "the file is locked by another process", SQLite's message.
    public var reason: String {
        if let lost = leaseLost {
            return "instance \(lost.owner) took the store's lease over (epoch \(lost.epoch)): this process writes and publishes nothing more"
        }
        if isDiskFull { return FreeSpace.inodes(near: path) == 0 ? "the disk is full: no free inodes are left" : "the disk is full" }
        if let failure { return failure.reason }
        if let errno { return String(cString: strerror(errno)) }
        let error = cause as NSError
        return error.localizedFailureReason ?? error.localizedDescription
    }

    /// One line: `cannot write /data/journal.sqlite: the disk is full (12 KiB free on /data)`.
    public var description: String {
        var line = "cannot \(action.rawValue) \(path): \(reason)"
        if isDiskFull, FreeSpace.inodes(near: path) != 0, let free = FreeSpace.bytes(near: path) {
            line += " (\(FreeSpace.describe(free)) free on \(URL(fileURLWithPath: path).deletingLastPathComponent().path))"
        }
        return line
    }
}

extension StorageError: Equatable {
    /// The same file, action, kind, backend error code, system error number and lease holder.
    public static func == (lhs: StorageError, rhs: StorageError) -> Bool {
        lhs.path == rhs.path && lhs.action == rhs.action && lhs.kind == rhs.kind && lhs.failure?.code == rhs.failure?.code
            && lhs.errno == rhs.errno && lhs.leaseLost == rhs.leaseLost
    }
}

/// A backend's own error (SQLite's, in Storage/SQLite/), which says what kind of failure it is: the one thing
/// ``StorageError`` asks of a backend.
package protocol StorageFailure: Error {
    /// What kind of failure it is, for a file at `path` (whose free space may decide it).
    func kind(at path: String) -> StorageError.Kind
    /// Why, in a few words, as the backend says it.
    var reason: String { get }
    /// The backend's code for it, to tell two errors apart.
    var code: Int { get }
    /// Whether the backend refused what it was given to write (a value it cannot hold, a constraint): the request that
    /// brought it may be the cause. Anything else (a permission, a missing table or function, a damaged file, the lease)
    /// is the storage's or its operator's doing, never a request's.
    var refusesTheData: Bool { get }
}

/// Runs a storage access on `path`, turning what the backend throws into a ``StorageError``.
package func storageAccess<T>(_ action: StorageError.Action, _ path: String, _ body: () throws -> T) throws(StorageError) -> T {
    do {
        return try body()
    } catch let error as StorageError {
        throw error
    } catch {
        throw StorageError(action, path, cause: error)
    }
}

/// The free space of a file system, as `statvfs` reports it to an unprivileged process.
package enum FreeSpace {
    /// The bytes free for unprivileged use on the file system of `path` (a file, or a directory), or `nil`
    /// when the system cannot say.
    package static func bytes(near path: String) -> UInt64? {
        var directory = path
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) || !isDirectory.boolValue {
            directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        }
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let (bytes, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow ? .max : bytes
    }

    /// The inodes free for unprivileged use on the file system of `path`, or `nil` when the system cannot say (or
    /// the file system has no fixed number, as btrfs).
    package static func inodes(near path: String) -> UInt64? {
        var info = statvfs()
        guard statvfs(URL(fileURLWithPath: path).deletingLastPathComponent().path, &info) == 0, info.f_files > 0 else { return nil }
        return UInt64(info.f_favail)
    }

    /// `0 bytes`, `12 KiB`, `3.4 MiB`, `1.2 GiB`.
    package static func describe(_ bytes: UInt64) -> String {
        if bytes < 1024 { return "\(bytes) bytes" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return value < 10 ? "\((value * 10).rounded(.down) / 10) \(units[unit])" : "\(Int(value)) \(units[unit])"
    }
}
