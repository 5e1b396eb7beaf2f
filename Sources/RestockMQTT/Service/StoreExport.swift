import Foundation
import RestockPipeline

/// `restock export`: a store's watches as JSON Lines (docs/operations.md, "Exporting the watches"), read from its data
/// directory as a WAL reader — an offline tool that is safe while the store runs, and changes nothing.
public enum StoreExport {
    /// Writes every watch of the data directory `source` to `output`, one JSON object a line, in position order, on a
    /// thread of its own (the read blocks).
    ///
    /// A row of the watch table that holds no valid watch (a file changed by hand, or damaged) is left out, as the
    /// store leaves it out at start, and handed to `leftOut`, described by its values, after the lines are written.
    /// - Returns: How many watches it wrote.
    /// - Throws: ``RestockMQTTError/backupRefused(_:)`` when `source` holds no store; a ``StorageError`` naming the file
    ///   that could not be read; the error of a write to `output`.
    public static func watches(from source: URL, to output: FileHandle, leftOut: (String) -> Void = { _ in }) async throws -> Int {
        let count = try await WatchExportLine.buffered(to: output) { line in try await SQLiteStorage.exportWatches(from: source, line) }
        count.leftOut.forEach(leftOut)
        return count.written
    }
}
