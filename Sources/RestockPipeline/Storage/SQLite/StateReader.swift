import Foundation
import GRDB
import RestockCore

/// Reads the store's state: the snapshot the store restores at start-up, the inventory and the customers with a
/// mirror it publishes again, how far the request log is applied, and how long the queues are.
///
/// It only reads, so it takes any `DatabaseReader`: the running store's pool, a read-only pool beside a running
/// store (WAL readers never block the writer), or a queue in memory in the tests.
struct StateReader: Sendable {
    private let reader: any DatabaseReader
    /// The file, as its errors name it.
    let path: String

    /// A reader of the store's state in `reader`, whose schema is ready (``StateSchema``).
    /// - Parameter path: The path errors name; the reader's own when `nil`.
    init(_ reader: any DatabaseReader, path: String? = nil) {
        self.reader = reader
        self.path = path ?? reader.path
    }

    /// Reads the state; a failure names the file.
    private func read<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try storageAccess(.read, path) { try reader.read(body) }
    }

    /// Everything the store needs to carry on, and a description of each row left out: rows that do not hold a valid
    /// watch, inventory or counter record (a file changed by hand, or damaged).
    func snapshot() throws(StorageError) -> (snapshot: StoreSnapshot, skipped: [String]) {
        try read { db in
            var skipped: [String] = []
            var snapshot = StoreSnapshot(watches: try WatchTable.load(db, skipped: &skipped))
            // Each row is decoded without trapping, and checked: the file is outside input.
            for row in try Row.fetchAll(db, StockRecord.all()) {
                guard let record = try? StockRecord(row: row), let sku = try? SKU(record.sku),
                    RequestLimits.stockSet.contains(record.quantity)
                else {
                    skipped.append("inventory \(Self.describe(row))")
                    continue
                }
                snapshot.inventory[sku] = record.quantity
            }
            var counters: [String: UInt64] = [:]
            for row in try Row.fetchAll(db, CounterRecord.all()) {
                guard let record = try? CounterRecord(row: row), record.value > 0 else {
                    skipped.append("counter \(Self.describe(row))")
                    continue
                }
                counters[record.name] = UInt64(record.value)
            }
            // Never behind what the rows hold, skipped ones included: a position is never given out twice.
            let highest = try WatchTable.highestPosition(db)
            snapshot.nextPosition = max(counters[CounterRecord.Name.nextPosition.rawValue] ?? 1, UInt64(max(highest, 0)) &+ 1)
            snapshot.nextAlertSequence = counters[CounterRecord.Name.nextAlertSequence.rawValue] ?? 1
            return (snapshot, skipped)
        }
    }

    /// A row's values, for a line that says it was left out.
    private static func describe(_ row: Row) -> String {
        row.databaseValues.map(\.description).joined(separator: ", ")
    }

    /// The on-hand quantity of every SKU the store has recorded, zeros included, in SKU order.
    /// - Throws: A ``StorageError`` whose cause is ``RestockMQTTError/dataDirectoryDamaged(file:problem:remedy:)``
    ///   when a row holds an invalid SKU.
    func inventory() throws(StorageError) -> [(SKU, Int)] {
        try read { db in
            try StockRecord.order(StockRecord.Columns.sku).fetchAll(db).map { record in
                guard let sku = try? SKU(record.sku) else {
                    throw RestockMQTTError.dataDirectoryDamaged(
                        file: path, problem: "the inventory holds an invalid SKU \(String(reflecting: record.sku))",
                        remedy: "restore the data directory from a backup")
                }
                return (sku, record.quantity)
            }
        }
    }

    /// Every customer the store has published a mirror for, watching something or not.
    func mirroredCustomers() throws(StorageError) -> [CustomerID] {
        try read { db in
            try MirrorRecord.order(MirrorRecord.Columns.customer).fetchAll(db).compactMap { try? CustomerID($0.customer) }
        }
    }

    /// The report of the store's figures as of `now` (``AlertFigures/report(at:sku:in:)``).
    func report(at now: Date, sku: SKU?) throws(StorageError) -> StoreReport {
        try read { db in try AlertFigures.report(at: now, sku: sku, in: db) }
    }

    /// The watches that have expired at `now`, soonest first, at most `limit`.
    func expiredWatches(at now: Date, limit: Int) throws(StorageError) -> [WatchKey] {
        try read { db in try WatchTable.expired(at: now, limit: limit, in: db) }
    }

    /// When the first watch expires after `now`; `nil` when none will.
    func nextExpiry(after now: Date) throws(StorageError) -> Date? {
        try read { db in try WatchTable.nextExpiry(after: now, in: db) }
    }

    /// The place in the request log of the last request applied (or set aside); 0 before the first.
    func processedThrough() throws(StorageError) -> Int64 {
        try read { db in try CounterRecord.value(of: .processedThrough, in: db) ?? 0 }
    }

    /// How many rows each queue holds: requests not yet applied (in `log`, and requests an earlier version journaled
    /// in the state and not yet carried over to it), messages waiting in the outbox, watches.
    /// Messages in the outbox not yet acknowledged (the alerts of a batch counted one by one).
    func outboxDepth() throws(StorageError) -> Int { try read { try Outbox.messageCount($0) } }

    func queueLengths(log: RequestLog?) throws(StorageError) -> (inbox: Int, outbox: Int, watches: Int) {
        let inbox = try log?.count(after: processedThrough()) ?? 0
        return try read { db in
            (inbox + (try EarlierInboxRecord.fetchCount(db)), try Outbox.messageCount(db), try WatchTable.count(db))
        }
    }
}
