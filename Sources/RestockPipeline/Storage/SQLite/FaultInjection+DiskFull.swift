import Foundation
import GRDB

extension FaultInjection {
    /// Throws what SQLite throws on a full disk, for a write to `path`, while `RESTOCK_FAULT=disk-full-while:` says so.
    static func failIfDiskFull(writing path: String) throws(StorageError) {
        guard let flag = diskFullFlag, FileManager.default.fileExists(atPath: flag) else { return }
        throw StorageError(.write, path, cause: DatabaseError(resultCode: .SQLITE_FULL, message: "database or disk is full (injected)"))
    }
}
