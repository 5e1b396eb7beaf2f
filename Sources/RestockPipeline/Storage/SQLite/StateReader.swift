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
    /// The store's own pool, whose writer this process alone uses (``StoreDatabase``): a snapshot holds it, so that no
    /// commit comes between its reads, and reads a large table of watches in halves over two of its connections at
    /// once (docs/benchmarks.md, B2). `nil`: one connection reads it all.
    private let ownPool: DatabasePool?
    /// From how many watches the table is read in halves.
    private let splitAbove: Int

    /// A reader of the store's state in `reader`, whose schema is ready (``StateSchema``).
    /// - Parameter path: The path errors name; the reader's own when `nil`.
    init(_ reader: any DatabaseReader, path: String? = nil) {
        self.reader = reader
        self.path = path ?? reader.path
        ownPool = nil
        splitAbove = .max
    }

    /// A reader of the store's state in `pool`, the store's own (see ``ownPool``), which reads a table of at least
    /// `splitAbove` watches in halves.
    init(owning pool: DatabasePool, splitAbove: Int = WatchTable.splitAbove) {
        reader = pool
        path = pool.path
        ownPool = pool
        self.splitAbove = splitAbove
    }

    /// Reads the state; a failure names the file.
    private func read<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try storageAccess(.read, path) { try reader.read(body) }
    }

    /// Everything the store needs to carry on, and a description of each row left out: rows that do not hold a valid
    /// watch, inventory or counter record (a file changed by hand, or damaged).
    func snapshot() throws(StorageError) -> (snapshot: StoreSnapshot, skipped: [String]) {
        guard let pool = ownPool else { return try read { db in try Self.snapshot(db) { try WatchTable.load($0, skipped: &$1) } } }
        return try storageAccess(.read, path) {
            try pool.writeWithoutTransaction { _ in
                try pool.read { db in try Self.snapshot(db) { try WatchTable.load($0, halvesOver: pool, splitAbove: splitAbove, skipped: &$1) } }
            }
        }
    }

    /// The snapshot in `db`, its watches read by `watches` (`restock export` reads it too: ``WatchExport``).
    static func snapshot(
        _ db: Database, watches: (Database, inout [String]) throws -> [Watch]
    ) throws -> (snapshot: StoreSnapshot, skipped: [String]) {
        var skipped: [String] = []
        var snapshot = StoreSnapshot(watches: try watches(db, &skipped))
        // Each row is decoded without trapping, and checked: the file is outside input.
        for (row, record) in try Self.inventoryRows(db) {
            guard let (sku, quantity) = record else {
                skipped.append("inventory \(Self.describe(row, values: 2))")
                continue
            }
            snapshot.inventory[sku] = quantity
        }
        var counters: [String: UInt64] = [:]
        for row in try Row.fetchAll(db, CounterRecord.all()) {
            // How far the log is synced is read on its own, and may be 0.
            if row[CounterRecord.Columns.name] as String? == CounterRecord.Name.journalSyncedThrough.rawValue { continue }
            guard let record = try? CounterRecord(row: row), StoredValues.isNextCounter(Int64(truncatingIfNeeded: record.value)) else {
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

    /// A row's values (its first `values`, when given), for a line that says it was left out.
    private static func describe(_ row: Row, values: Int? = nil) -> String {
        row.databaseValues.prefix(values ?? row.count).map(StoredValues.described).joined(separator: ", ")
    }

    /// The on-hand quantity of every SKU the store has recorded, zeros included, in SKU order; a row that holds no valid
    /// record is left out, as the snapshot at start-up leaves it out and says so (found by an outside trial: such a row,
    /// said once at start-up, stopped the store when a broker that had lost its session made it publish the inventory
    /// again).
    func inventory() throws(StorageError) -> [(SKU, Int)] {
        try read { db in try Self.inventoryRows(db, ordered: true).compactMap(\.record) }
    }

    /// Every row of the inventory, with its SKU and quantity when they are valid: a SKU with no NUL byte in its text
    /// (SQLite's text reads only up to one, which could name another SKU) and a quantity within the contract's range.
    private static func inventoryRows(_ db: Database, ordered: Bool = false) throws -> [(row: Row, record: (SKU, Int)?)] {
        let sku = StockRecord.Columns.sku.name, quantity = StockRecord.Columns.quantity.name
        let rows = try Row.fetchAll(
            db, sql: "SELECT \(sku), \(quantity), length(CAST(\(sku) AS BLOB)) AS bytes FROM \(StockRecord.databaseTableName)\(ordered ? " ORDER BY \(sku)" : "")")
        return rows.map { row in
            guard let text = try? row.decode(String.self, atIndex: 0), let bytes = try? row.decode(Int.self, atIndex: 2),
                text.utf8.count == bytes, let valid = try? SKU(text),
                let amount = try? row.decode(Int.self, atIndex: 1), RequestLimits.stockSet.contains(amount)
            else { return (row, nil) }
            return (row, (valid, amount))
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

    /// The last place of the request log known synced when the state was last committed; `nil` when no commit recorded
    /// it (a state written by an earlier version, whose log synced each request before it was applied).
    func journalSyncedThrough() throws(StorageError) -> Int64? {
        try read { db in try CounterRecord.value(of: .journalSyncedThrough, in: db) }
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
