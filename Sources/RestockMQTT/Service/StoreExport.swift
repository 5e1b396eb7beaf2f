import Foundation
import RestockPipeline

/// `restock export`: a store's watches as JSON Lines (docs/operations.md, "Exporting the watches"), read from its data
/// directory as a WAL reader — an offline tool that is safe while the store runs, and changes nothing.
public enum StoreExport {
    /// Writes every watch of the data directory `source` to `output`, one JSON object a line, in position order, on a
    /// thread of its own (the read blocks).
    /// - Returns: How many watches it wrote.
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` when `source` holds no store; a ``StorageError`` naming the file
    ///   that could not be read; the error of a write to `output`.
    public static func watches(from source: URL, to output: FileHandle) async throws -> Int {
        try await WatchExportLine.buffered(to: output) { line in try await SQLiteStorage.exportWatches(from: source, line) }
    }
}
