import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure of one of the store's files: which file, what was being done with it, and the cause as SQLite or
/// the system gave it (GRDB's `DatabaseError`, with SQLite's result code, or the `errno` of a system call).
///
/// ``isPassable`` tells a failure that may pass by itself — a full disk, a file another process holds locked, an
/// I/O error — from one that will not (a damaged file). The running store pauses on the first and resumes when
/// its files can be written again (docs/operations.md, "A full disk"); it stops on the second.
public struct StorageError: Error, CustomStringConvertible {
    /// What the store was doing with the file.
    public enum Action: String, Sendable {
        case open, read, write
    }

    /// The file, as a path.
    public let path: String
    /// What the store was doing with it.
    public let action: Action
    /// What SQLite or the system said: a GRDB `DatabaseError`, or a `POSIXError`.
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

    /// SQLite's extended result code, when SQLite refused.
    public var resultCode: ResultCode? { (cause as? DatabaseError)?.extendedResultCode }

    /// The system's error number, when a system call failed (also one Foundation wrapped in an `NSError`).
    public var errno: Int32? {
        if let posix = cause as? POSIXError { return posix.code.rawValue }
        let error = cause as NSError
        if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return Int32(underlying.code)
        }
        return nil
    }

    /// Whether the disk (or the file system's quota) is full.
    public var isDiskFull: Bool {
        if resultCode?.primaryResultCode == .SQLITE_FULL || errno == ENOSPC || errno == EDQUOT { return true }
        // SQLite reports some writes the disk refused (growing its shared-memory file) as I/O errors, and a file it
        // could not make for want of inodes as "cannot open", without errno.
        guard [.SQLITE_IOERR, .SQLITE_CANTOPEN].contains(resultCode?.primaryResultCode) else { return false }
        return (FreeSpace.bytes(near: path).map { $0 < 64 * 1024 } ?? false) || FreeSpace.inodes(near: path) == 0
    }

    /// Whether another process holds the file locked (beyond the busy timeout).
    public var isLocked: Bool { [.SQLITE_BUSY, .SQLITE_LOCKED].contains(resultCode?.primaryResultCode) }

    /// Whether the failure may pass by itself, so that trying the same again later can succeed: the disk is full,
    /// the file is busy or locked by another process, or the file system failed an operation (an I/O error, a
    /// file system remounted read-only). A damaged or foreign file (corrupt, not a database) is not passable.
    public var isPassable: Bool {
        if let code = resultCode?.primaryResultCode {
            return [.SQLITE_FULL, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_NOMEM]
                .contains(code)
        }
        if let errno { return [ENOSPC, EDQUOT, EIO, EAGAIN, EINTR, ENOMEM, EROFS, EMFILE, ENFILE].contains(errno) }
        return false
    }

    /// Why, in a few words: "the disk is full", "the file is locked by another process", SQLite's message.
    public var reason: String {
        if isDiskFull { return FreeSpace.inodes(near: path) == 0 ? "the disk is full: no free inodes are left" : "the disk is full" }
        if let error = cause as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED: return "the file is locked by another process (\(error.message ?? "database is locked"))"
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: return "the file is damaged or not a database (\(error.message ?? "corrupt"))"
            default: return "\(error.message ?? "SQLite error") (SQLite error \(error.extendedResultCode.rawValue))"
            }
        }
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
    /// The same file, action, SQLite result code and system error number.
    public static func == (lhs: StorageError, rhs: StorageError) -> Bool {
        lhs.path == rhs.path && lhs.action == rhs.action && lhs.resultCode == rhs.resultCode && lhs.errno == rhs.errno
    }
}

/// Runs a database access on `path`, turning what GRDB throws into a ``StorageError``.
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
