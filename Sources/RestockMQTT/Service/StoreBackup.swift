import Foundation
import RestockPipeline

/// `restock backup`: a consistent copy of a store's data directory, taken while the store runs or not
/// (docs/operations.md, "Backup and restore"). The copy is a data directory: `restock serve --data COPY` starts on it
/// with every watch the store had when the copy was taken, and makes the broker's retained mirrors and inventory
/// agree with it before it takes a request.
public enum StoreBackup {
    /// Copies the data directory `source` into `destination`, on a thread of its own (the copy blocks).
    /// - Returns: How many watches the copy holds.
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` when `source` holds no store or `destination` exists and is
    ///   not an empty directory (nothing is written then); a ``StorageError`` naming the file that could not be read
    ///   or written (what was written is removed).
    public static func copy(from source: URL, to destination: URL) async throws -> Int {
        try await SQLiteStorage.backup(from: source, to: destination)
    }
}
