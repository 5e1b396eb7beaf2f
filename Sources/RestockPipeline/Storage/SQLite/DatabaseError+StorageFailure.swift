import GRDB

/// SQLite's errors, as ``StorageError`` classifies them.
extension DatabaseError: StorageFailure {
    package func kind(at path: String) -> StorageError.Kind {
        switch resultCode {
        case .SQLITE_FULL: return .full
        // SQLite reports some writes the disk refused (growing its shared-memory file) as I/O errors, and a file it could
        // not make for want of inodes as "cannot open", without errno.
        case .SQLITE_IOERR, .SQLITE_CANTOPEN:
            let full = (FreeSpace.bytes(near: path).map { $0 < 64 * 1024 } ?? false) || FreeSpace.inodes(near: path) == 0
            return full ? .full : .unavailable
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .locked
        case .SQLITE_READONLY, .SQLITE_NOMEM: return .unavailable
        default: return .corrupt
        }
    }

    package var reason: String {
        switch resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: "the file is locked by another process (\(message ?? "database is locked"))"
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: "the file is damaged or not a database (\(message ?? "corrupt"))"
        default: "\(message ?? "SQLite error") (SQLite error \(extendedResultCode.rawValue))"
        }
    }

    package var code: Int { Int(extendedResultCode.rawValue) }

    /// A constraint, a value too big, of the wrong type or out of range.
    package var refusesTheData: Bool { [.SQLITE_CONSTRAINT, .SQLITE_TOOBIG, .SQLITE_MISMATCH, .SQLITE_RANGE].contains(resultCode) }
}
