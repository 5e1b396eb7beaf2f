import GRDB

/// One SQL statement run for many rows at once: `head` followed by `(?, ?, …), (?, ?, …)` for up to
/// ``rowsPerStatement`` rows, then `tail`. Each shape is compiled once per connection and reused.
///
/// The commit's way to write thousands of rows: SQLite then parses nothing and GRDB binds in bulk. GRDB records
/// inserted one at a time (`insert(_:onConflict:)`) encode themselves by name and run a statement each: a commit of
/// 20,000 rows took 3 to 8 times as long so (inventory, outbox, mirror rows; watches in WatchTable.swift).
struct BulkStatement {
    /// Rows per statement: 128 rows of 7 columns stay far below SQLite's limit of 32,766 parameters.
    static let rowsPerStatement = 128

    let head: String
    let columns: Int
    var tail = ""

    init(head: String, columns: Int, tail: String = "") {
        self.head = head
        self.columns = columns
        self.tail = tail
    }

    /// `INSERT OR <conflict> INTO <table> (<columns>) VALUES …` for records of `type`.
    init<Record: BulkInsertable>(inserting type: Record.Type, orElse conflict: Database.ConflictResolution) {
        let names = Record.insertedColumns.map(\.name).joined(separator: ", ")
        self.init(
            head: "INSERT OR \(conflict.rawValue) INTO \(Record.databaseTableName) (\(names)) VALUES ",
            columns: Record.insertedColumns.count)
    }

    /// Inserts `records`, in order, with a statement made by ``init(inserting:orElse:)``.
    func insert<Record: BulkInsertable>(_ records: [Record], in db: Database) throws {
        try execute(records.map(\.insertedValues), in: db)
    }

    /// Runs the statement over `rows`, in order, each row holding `columns` values.
    func execute(_ rows: [[(any DatabaseValueConvertible)?]], in db: Database) throws {
        var start = rows.startIndex
        while start < rows.endIndex {
            let chunk = rows[start..<min(start + Self.rowsPerStatement, rows.endIndex)]
            let statement = try db.cachedStatement(sql: sql(rows: chunk.count))
            try statement.execute(arguments: StatementArguments(chunk.flatMap { $0 }))
            start = chunk.endIndex
        }
    }

    private func sql(rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
        return head + Array(repeating: row, count: rows).joined(separator: ", ") + tail
    }
}

/// A record that a commit writes many to a statement (``BulkStatement``) rather than one at a time: its columns,
/// and its values in their order, the same as it encodes by name (BulkInsertTests holds them to it).
protocol BulkInsertable: EncodableRecord, TableRecord {
    /// The columns written, all of the table's.
    static var insertedColumns: [Column] { get }
    /// The values of ``insertedColumns``, in order.
    var insertedValues: [(any DatabaseValueConvertible)?] { get }
}
