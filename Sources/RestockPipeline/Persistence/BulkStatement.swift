import GRDB

/// One SQL statement run for many rows at once: `head` followed by `(?, ?, …), (?, ?, …)` for up to
/// ``rowsPerStatement`` rows, then `tail`. Each shape is compiled once per connection and reused.
struct BulkStatement {
    /// Rows per statement: 128 rows of 7 columns stay far below SQLite's limit of 32,766 parameters.
    static let rowsPerStatement = 128

    let head: String
    let columns: Int
    var tail = ""

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
