import Dispatch
import Foundation
import GRDB
import GRDBSQLite
import RestockCore

/// The `watch` table of the store's state, and its two hot paths: the restore of every watch at start-up (up to
/// 1,000,000 of them) and the writes of a commit (thousands of rows in one transaction).
///
/// Unlike the other tables it has no record type that GRDB decodes or encodes row by row, on purpose (measured in
/// a release build, 200,000 watches restored, 20,000 saved in one commit):
/// - The restore reads each value straight from the statement, at an index looked up by name once per restore: as
///   fast as fixed indexes. A `FetchableRecord` decoding each row by column name took a third longer.
/// - A commit writes many rows to a statement (``BulkStatement``). Records inserted one at a time took 3 times as
///   long with `INSERT OR REPLACE` (which also rewrites both indexes), 10 times with GRDB's `upsert`.
///
/// The names of the columns are still in one place, ``Columns``, and every statement is built from them.
enum WatchTable {
    /// The table's name.
    static let name = "watch"

    /// The table's columns, in the order the restore selects them and a commit writes them.
    enum Columns: String, ColumnExpression, CaseIterable {
        case customer, sku, mode, minQuantity, position, since, waiting, expiresAt

        /// Whether a value of SQLite's fundamental type `type` (`sqlite3_column_type`) may be valid here: `since` and
        /// `expiresAt` are seconds since 2001-01-01, as `Date` keeps them (an exact round trip), `expiresAt` NULL for a
        /// watch that never expires; `waiting` is 0 or 1.
        func accepts(_ type: Int32) -> Bool {
            switch self {
            case .customer, .sku, .mode: type == SQLITE_TEXT
            case .minQuantity, .position, .waiting: type == SQLITE_INTEGER
            case .since: type == SQLITE_FLOAT || type == SQLITE_INTEGER
            case .expiresAt: type == SQLITE_FLOAT || type == SQLITE_INTEGER || type == SQLITE_NULL
            }
        }
    }

    /// The columns that identify a watch: one customer, one SKU.
    private static let key: [Columns] = [.customer, .sku]
    private static let columnList = Columns.allCases.map(\.rawValue).joined(separator: ", ")

    // MARK: Restore

    /// Where each value is in the rows of the restore: looked up by name once, then read by index for every row.
    private struct Layout {
        let customer, sku, mode, minQuantity, position, since, waiting, expiresAt: Int
        /// Each column's index, in ``Columns``' order.
        let all: [Int32]

        init(_ statement: Statement) throws {
            let all = try Columns.allCases.map { column in
                guard let index = statement.index(ofColumn: column.name) else {
                    throw DatabaseError(resultCode: .SQLITE_ERROR, message: "no column \(column.name) in \(statement.sql)")
                }
                return index
            }
            (customer, sku, mode, minQuantity) = (all[0], all[1], all[2], all[3])
            (position, since, waiting, expiresAt) = (all[4], all[5], all[6], all[7])
            self.all = all.map(Int32.init)
        }

        /// Whether the current row of `statement` holds a value of a valid type in every column: read before any value
        /// is (SQLite may convert a value when it is read as another type).
        func typesAreValid(in statement: SQLiteStatement) -> Bool {
            zip(Columns.allCases, all).allSatisfy { column, index in column.accepts(sqlite3_column_type(statement, index)) }
        }
    }

    /// Every valid watch, in position order; a row that holds no valid watch (a file changed by hand, or damaged) is
    /// described in `skipped` instead.
    ///
    /// The table is read in its own order, which is position order unless it was rebuilt, or written by commits (they
    /// write in key order): walking the position index instead costs a lookup in the table per row, the read's largest
    /// cost with a million watches (docs/benchmarks.md, B2). Rows out of order are put in order once read
    /// (``Watch/inPositionOrder(_:)``).
    static func load(_ db: Database, skipped: inout [String]) throws -> [Watch] {
        Watch.inPositionOrder(try load(db, rows: nil, capacity: count(db), skipped: &skipped))
    }

    /// ``load(_:skipped:)`` over two connections of `pool` at once when the table holds `splitAbove` rows or more (one
    /// core reads each half of its rows by rowid): `db`, a connection of `pool` in a read transaction, reads the first
    /// half; a second, on a thread of its own, the rest. The caller keeps the rows still meanwhile (``StateReader``: it
    /// holds the pool's writer).
    static func load(_ db: Database, halvesOver pool: DatabasePool, splitAbove: Int, skipped: inout [String]) throws -> [Watch] {
        let rows = try count(db)
        guard rows >= splitAbove, let (first, last) = try rowRange(db), first < last else { return try load(db, skipped: &skipped) }
        // Rowids are the file's: any two Int64s. The middle is taken without overflow.
        let middle = Int64(Int128(first) + (Int128(last) - Int128(first)) / 2)
        let capacity = rows / 2 + 1
        let secondHalf = ThreadResult<Result<([Watch], [String]), any Error>>()
        DispatchQueue.global().async {
            secondHalf.finish(
                Result {
                    try pool.read { db in
                        var skipped: [String] = []
                        return (try load(db, rows: (middle + 1)...last, capacity: capacity, skipped: &skipped), skipped)
                    }
                })
        }
        let firstHalf = Result { try load(db, rows: first...middle, capacity: capacity, skipped: &skipped) }
        // Waited for even when the first half failed: nothing reads on once this returns.
        let (rest, restSkipped) = try secondHalf.wait().get()
        skipped += restSkipped
        return Watch.inPositionOrder(joining: [try firstHalf.get(), rest])
    }

    /// From how many rows the table is read in halves; below, a thread and a second connection's transaction cost more
    /// than they save.
    static let splitAbove = 50_000

    /// The lowest and highest rowid of the table; `nil` when it is empty.
    private static func rowRange(_ db: Database) throws -> (Int64, Int64)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT MIN(rowid), MAX(rowid) FROM \(name)"),
            let first = row[0] as Int64?, let last = row[1] as Int64?
        else { return nil }
        return (first, last)
    }

    /// The valid watches of the rows whose rowid is in `rows` (every row when `nil`), in the table's order, in an array
    /// made for `capacity`.
    private static func load(_ db: Database, rows: ClosedRange<Int64>?, capacity: Int, skipped: inout [String]) throws -> [Watch] {
        var watches: [Watch] = []
        watches.reserveCapacity(capacity)
        let statement = try db.makeStatement(sql: "SELECT \(columnList) FROM \(name)\(rows == nil ? "" : " WHERE rowid BETWEEN ? AND ?")")
        if let rows { statement.arguments = [rows.lowerBound, rows.upperBound] }
        let at = try Layout(statement)
        let cursor = try Row.fetchCursor(statement)
        // Watches of one SKU come in runs: its identifier is checked once per run, and shared.
        var lastSKU: SKU?
        while let row = try cursor.next() {
            // Each value's type is checked (a file changed by hand may hold anything), so that a valid row's values
            // are read straight from the statement, without a DatabaseValue each.
            let sqlite = statement.sqliteStatement
            guard at.typesAreValid(in: sqlite),
                let customer = try? CustomerID(try Self.text(row, at: at.customer, of: sqlite)),
                let sku = sku(try Self.text(row, at: at.sku, of: sqlite), reusing: &lastSKU),
                let mode = WatchMode(rawValue: try Self.text(row, at: at.mode, of: sqlite)),
                case let minQuantity = try row.decode(Int64.self, atIndex: at.minQuantity),
                RequestLimits.minQuantity.contains(Int(truncatingIfNeeded: minQuantity)),
                case let position = try row.decode(Int64.self, atIndex: at.position), StoredValues.isCounter(position),
                case let since = try row.decode(Double.self, atIndex: at.since), StoredValues.isDate(since),
                case let expiresAt = try row.decode(Double?.self, atIndex: at.expiresAt), expiresAt.map(StoredValues.isDate) ?? true,
                case let waiting = try row.decode(Int64.self, atIndex: at.waiting), waiting == 0 || waiting == 1
            else {
                let values = Columns.allCases.map { row[$0.name] as DatabaseValue }
                skipped.append("watch \(values.map(StoredValues.described).joined(separator: ", "))")
                continue
            }
            watches.append(
                Watch(
                    customer: customer, sku: sku, mode: mode, minQuantity: Int(minQuantity), position: UInt64(position),
                    since: Date(timeIntervalSinceReferenceDate: since), isWaiting: waiting == 1,
                    expiresAt: expiresAt.map(Date.init(timeIntervalSinceReferenceDate:))))
        }
        return watches
    }

    /// The text at `index` of the current row, or "" when it holds a NUL byte: SQLite's text then reads as only what
    /// comes before it, which could name another, valid, customer or SKU (found by an outside trial: a SKU `k1\0x` read
    /// as `k1`, and its watch replaced the customer's real one).
    private static func text(_ row: Row, at index: Int, of statement: SQLiteStatement) throws -> String {
        let text = try row.decode(String.self, atIndex: index)
        return text.utf8.count == Int(sqlite3_column_bytes(statement, Int32(index))) ? text : ""
    }

    /// `text` as a SKU: the last one read when it is the same text (checked once for a run of watches of one SKU).
    private static func sku(_ text: String, reusing last: inout SKU?) -> SKU? {
        if let last, last.rawValue == text { return last }
        last = try? SKU(text)
        return last
    }

    /// How many rows the table holds, valid or not.
    static func count(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(name)") ?? 0
    }

    /// The highest position a row holds up to ``StoredValues/maximumCounter``, skipped ones included (they keep their
    /// place in the table); 0 when none. A position past the bound is no new watch's, which stay below it.
    static func highestPosition(_ db: Database) throws -> Int64 {
        let position = Columns.position.name
        return try Int64.fetchOne(
            db,
            sql: "SELECT MAX(\(position)) FROM \(name) WHERE typeof(\(position)) = 'integer' AND \(position) <= \(StoredValues.maximumCounter)"
        ) ?? 0
    }

    // MARK: Expiry

    /// The watches that have expired at `now` (``Watch/expiresAt`` not after it), soonest first, at most `limit`: the
    /// durable timer of watch expiry, an index over `expiresAt`.
    static func expired(at now: Date, limit: Int, in db: Database) throws -> [WatchKey] {
        let rows = try Row.fetchAll(
            db,
            sql: "SELECT \(Columns.customer.name), \(Columns.sku.name) FROM \(name) WHERE \(Columns.expiresAt.name) <= ? ORDER BY \(Columns.expiresAt.name) LIMIT ?",
            arguments: [now.timeIntervalSinceReferenceDate, limit])
        return rows.compactMap { row in
            guard let customer = try? CustomerID(row[0] as String? ?? ""), let sku = try? SKU(row[1] as String? ?? "") else { return nil }
            return WatchKey(customer: customer, sku: sku)
        }
    }

    /// When the first watch expires after `now`; `nil` when none will.
    static func nextExpiry(after now: Date, in db: Database) throws -> Date? {
        let column = Columns.expiresAt.name
        return try Double.fetchOne(db, sql: "SELECT MIN(\(column)) FROM \(name) WHERE \(column) > ?", arguments: [now.timeIntervalSinceReferenceDate])
            .map(Date.init(timeIntervalSinceReferenceDate:))
    }

    // MARK: Commit

    /// Applies watch changes in the order they were made; runs of saves or deletes go many to a statement.
    static func apply(_ changes: [StoreChanges.WatchChange], in db: Database) throws {
        var run = Run()
        for change in changes {
            switch change {
            case .save(let watch):
                if !run.deletes.isEmpty { try run.write(in: db) }
                run.saves.append(watch)
            case .remove(let key):
                if !run.saves.isEmpty { try run.write(in: db) }
                run.deletes.append(key)
            case .setWaiting(let waiting, let positions):
                try run.write(in: db)
                // One statement for a whole line of watches: a restock to 100,000 `every` customers flips
                // 100,000 flags, which one row at a time was most of its commit.
                try db.cachedStatement(sql: setWaiting).execute(arguments: [waiting, jsonArray(positions)])
            case .removePositions(let positions):
                try run.write(in: db)
                try db.cachedStatement(sql: removePositions).execute(arguments: [jsonArray(positions)])
            }
        }
        try run.write(in: db)
    }

    private static let setWaiting =
        "UPDATE \(name) SET \(Columns.waiting.name) = ? WHERE \(Columns.position.name) IN (SELECT value FROM json_each(?))"
    private static let removePositions = "DELETE FROM \(name) WHERE \(Columns.position.name) IN (SELECT value FROM json_each(?))"

    /// An upsert changes a known watch's row in place (a REPLACE would delete it and insert it again, rewriting
    /// both of its indexes). Every column is set: a watch dropped and made again within one batch comes back
    /// with a new position.
    private static let upsert = BulkStatement(
        head: "INSERT INTO \(name) (\(columnList)) VALUES ",
        columns: Columns.allCases.count,
        tail: " ON CONFLICT (\(key.map(\.rawValue).joined(separator: ", "))) DO UPDATE SET "
            + Columns.allCases.filter { !key.contains($0) }.map { "\($0.rawValue) = excluded.\($0.rawValue)" }.joined(separator: ", "))

    private static let delete = BulkStatement(
        head: "DELETE FROM \(name) WHERE (\(key.map(\.rawValue).joined(separator: ", "))) IN (VALUES ", columns: key.count, tail: ")")

    /// A run of saves or of deletes, written many rows to a statement.
    private struct Run {
        var saves: [Watch] = []
        var deletes: [WatchKey] = []

        /// Writes the run (saves in key order; a key saved twice keeps its last version) and empties it.
        mutating func write(in db: Database) throws {
            if !saves.isEmpty {
                // The sort is stable, so a later save of a key stays later.
                let rows = saves.sorted { ($0.customer, $0.sku) < ($1.customer, $1.sku) }.map(WatchTable.values)
                try upsert.execute(rows, in: db)
            }
            if !deletes.isEmpty {
                try delete.execute(deletes.map { [$0.customer.rawValue, $0.sku.rawValue] }, in: db)
            }
            self = Run()
        }
    }

    /// A watch's values, in the order of ``Columns``.
    private static func values(_ watch: Watch) -> [(any DatabaseValueConvertible)?] {
        Columns.allCases.map { column in
            switch column {
            case .customer: watch.customer.rawValue
            case .sku: watch.sku.rawValue
            case .mode: watch.mode.rawValue
            case .minQuantity: watch.minQuantity
            case .position: Int64(watch.position)
            case .since: watch.since.timeIntervalSinceReferenceDate
            case .waiting: watch.isWaiting
            case .expiresAt: watch.expiresAt?.timeIntervalSinceReferenceDate
            }
        }
    }

    /// `[1,2,3]`: positions for `json_each`.
    private static func jsonArray(_ positions: [UInt64]) -> String {
        "[" + positions.map(String.init).joined(separator: ",") + "]"
    }
}

