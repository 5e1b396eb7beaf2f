import Foundation
import GRDB
import RestockCore
import SeededRandom
import Testing

@testable import RestockPipeline

/// The store's own state read at start-up: a large table of watches in two halves by rowid, over two connections at
/// once (``WatchTable/load(_:halvesOver:splitAbove:skipped:)``), against the same file read by one connection.
@Suite("A table of watches read in halves")
struct SplitReadTests {
    /// How a case's rowids are laid out: the halves are cut at the middle rowid, not the middle row.
    enum Rowids: CaseIterable {
        /// 1, 2, 3, … (a table written by the store).
        case dense
        /// Far apart, negative ones included.
        case spread
        /// Anywhere in Int64, the extremes included (a file changed by hand): the middle is taken without overflow.
        case anywhere
    }

    @Test("the snapshot read in halves over two connections is the one a single connection reads: every row once, rows damaged in either half named, positions out of order put in order", arguments: 0..<30)
    func halvesReadAsOne(seed: UInt64) throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "restock-split-read-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try DataDirectory(directory).openState()
        try StateSchema.prepare(pool)
        var random = SplitMix64(seed: seed)
        let layout = Rowids.allCases[Int(seed) % Rowids.allCases.count]
        let rows = Int.random(in: 2...300, using: &random)
        let positions = (1...UInt64(3 * rows)).shuffled(using: &random).prefix(rows)
        var rowids = Set<Int64>()
        while rowids.count < rows {
            switch layout {
            case .dense: rowids.insert(Int64(rowids.count + 1))
            case .spread: rowids.insert(Int64.random(in: -1_000_000...1_000_000, using: &random))
            case .anywhere: rowids.insert([Int64.min, .max].randomElement(using: &random)! / Int64.random(in: 1...3, using: &random) &+ Int64(rowids.count))
            }
        }
        var damaged = 0
        try pool.write { db in
            for (index, (rowid, position)) in zip(rowids.shuffled(using: &random), positions).enumerated() {
                let isDamaged = random.next() % 8 == 0
                if isDamaged { damaged += 1 }
                try db.execute(
                    sql: "INSERT INTO watch (rowid, customer, sku, mode, minQuantity, position, since, waiting) VALUES (?, ?, 'ipad', 'every', 1, ?, 0, 1)",
                    arguments: [rowid, isDamaged ? "bad \(index)!" : "c\(index)", Int64(position)])
            }
        }
        let whole = try StateReader(pool as any DatabaseReader).snapshot()
        let halves = try StateReader(owning: pool, splitAbove: 2).snapshot()
        #expect(whole.snapshot.watches.count == rows - damaged && whole.skipped.count == damaged, "seed \(seed)")
        #expect(whole.snapshot.watches.map(\.position) == whole.snapshot.watches.map(\.position).sorted())
        #expect(halves.snapshot == whole.snapshot, "seed \(seed), \(layout)")
        #expect(halves.skipped == whole.skipped, "seed \(seed), \(layout)")
    }
}
