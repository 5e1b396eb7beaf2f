import Foundation
import GRDB
import Testing

@testable import RestockPipeline

/// The records a commit writes many to a statement (``BulkInsertable``, ``BulkStatement``), in memory.
@Suite("Bulk inserts")
struct BulkInsertTests {
    /// The values a bulk insert writes, by column name.
    static func bulkRow(_ record: some BulkInsertable) -> [String: DatabaseValue] {
        let names = type(of: record).insertedColumns.map(\.name)
        return Dictionary(uniqueKeysWithValues: zip(names, record.insertedValues.map { $0?.databaseValue ?? .null }))
    }

    @Test("each column gets what the record encodes by name, and every column is written")
    func valuesAreTheRecords() throws {
        let outbox = OutboxRecord(seq: 3, key: "k", topic: "t", payload: Data([9]), retain: true, batch: 4, sent: 1)
        #expect(Self.bulkRow(outbox) == (try outbox.databaseDictionary))
        let stock = StockRecord(sku: "ipad", quantity: 5)
        #expect(Self.bulkRow(stock) == (try stock.databaseDictionary))
        let mirror = MirrorRecord(customer: "alice")
        #expect(Self.bulkRow(mirror) == (try mirror.databaseDictionary))
        let queue = try DatabaseQueue()
        try StateSchema.prepare(queue)
        for (table, columns) in [
            (OutboxRecord.databaseTableName, OutboxRecord.insertedColumns), (StockRecord.databaseTableName, StockRecord.insertedColumns),
            (MirrorRecord.databaseTableName, MirrorRecord.insertedColumns),
        ] {
            let inTable = try queue.read { db in try db.columns(in: table).map(\.name).sorted() }
            #expect(inTable == columns.map(\.name).sorted(), "\(table)")
        }
    }

    @Test("rows of more than one statement land in order; on a conflict the later row replaces the earlier, or is ignored")
    func manyStatements() throws {
        let queue = try DatabaseQueue()
        try StateSchema.prepare(queue)
        let count = BulkStatement.rowsPerStatement * 2 + 5
        var stock = (0..<count).map { StockRecord(sku: "sku\($0)", quantity: $0) }
        stock.append(StockRecord(sku: "sku0", quantity: 99))
        let mirrors = [MirrorRecord(customer: "alice"), MirrorRecord(customer: "alice")]
        try queue.write { db in
            try BulkStatement(inserting: StockRecord.self, orElse: .replace).insert(stock, in: db)
            try BulkStatement(inserting: MirrorRecord.self, orElse: .ignore).insert(mirrors, in: db)
        }
        let read = try queue.read { db in try StockRecord.fetchAll(db) }
        #expect(Set(read) == Set(stock.dropFirst()))
        #expect(try queue.read { db in try MirrorRecord.fetchAll(db) } == [MirrorRecord(customer: "alice")])
    }
}
