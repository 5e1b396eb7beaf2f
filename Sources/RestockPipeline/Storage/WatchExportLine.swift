import Foundation
import RestockCore

/// One line of `restock export` (docs/operations.md, "Exporting the watches"): a watch, with its store, as JSON with
/// sorted keys — the same on every backend.
package struct WatchExportLine: Encodable {
    var store: String
    var customer: String
    var sku: String
    var mode: String
    var minQuantity: Int
    var position: UInt64
    var since: String
    var expiresAt: String?
    var waiting: Bool

    /// The line of `watch` of `store`.
    package init(store: String, watch: Watch) {
        self.store = store
        customer = watch.customer.rawValue
        sku = watch.sku.rawValue
        mode = watch.mode.rawValue
        minQuantity = watch.minQuantity
        position = watch.position
        since = Timestamp.string(from: watch.since)
        expiresAt = watch.expiresAt.map(Timestamp.string(from:))
        waiting = watch.isWaiting
    }

    /// Writes every watch of `watches` through `write`, a line (with its newline) at a time; returns how many.
    package static func write(_ watches: [Watch], of store: String, to write: (Data) throws -> Void) throws -> Int {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for watch in watches {
            var data = try encoder.encode(WatchExportLine(store: store, watch: watch))
            data.append(0x0A)
            try write(data)
        }
        return watches.count
    }

    /// Runs `export` with a writer that hands `output` what it writes 64 KiB at a time; returns what `export` returns.
    /// A write to `output` that fails is thrown as its own error, not as what `export` makes of it (found by an outside
    /// trial: a file-size limit on the output read "cannot read …/store.sqlite: File too large").
    package static func buffered<Count>(to output: FileHandle, _ export: ((Data) throws -> Void) async throws -> Count) async throws -> Count {
        var buffer = Data()
        var writeFailure: (any Error)?
        let count: Count
        do {
            count = try await export { line in
                buffer.append(line)
                if buffer.count >= 1 << 16 {
                    do {
                        try output.write(contentsOf: buffer)
                    } catch {
                        writeFailure = error
                        throw error
                    }
                    buffer.removeAll(keepingCapacity: true)
                }
            }
        } catch {
            throw writeFailure ?? error
        }
        try output.write(contentsOf: buffer)
        return count
    }
}

/// What an export wrote: its lines, and a description of each row it left out because it holds no valid watch (a row
/// changed by hand, or damaged), as the store leaves it out at start.
package struct WatchExportCount: Sendable, Equatable {
    /// The lines written: one per watch.
    package var written: Int
    /// Each row left out, described by its values.
    package var leftOut: [String]

    package init(written: Int, leftOut: [String]) {
        self.written = written
        self.leftOut = leftOut
    }
}
