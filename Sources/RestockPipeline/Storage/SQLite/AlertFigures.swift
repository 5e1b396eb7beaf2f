import Foundation
import GRDB
import RestockCore

/// The store's figures of alerts per SKU, for reports (docs/contract.md, "Reports"): how many it raised and how many
/// the broker acknowledged, in the `alertFigure` table, one row per SKU and hour (seconds since 1970 / 3600, on the
/// store's clock). Rows older than a day are folded into hour 0, which holds the rest of the store's life, so the table
/// keeps at most about 26 rows per SKU.
enum AlertFigures {
    /// The hour `date` falls in (``ReportFigures/hour(of:)``).
    static func hour(of date: Date) -> Int64 { ReportFigures.hour(of: date) }

    /// Adds `raised` alerts per SKU to the hour of `date`, and folds hours older than a day when it starts a new one.
    static func record(raised: [SKU: Int], at date: Date, in db: Database) throws {
        guard !raised.isEmpty else { return }
        let hour = hour(of: date)
        try add(raised.map { ($0.key.rawValue, $0.value) }, column: "raised", hour: hour, in: db)
        try fold(before: ReportFigures.firstHourOfDay(endingIn: hour), in: db)
    }

    /// Adds the alerts the broker acknowledged in one round — single messages by place, batches by place and how many of
    /// their alerts are acknowledged now — to their SKUs, in the hour of `date`; before the outbox forgets them.
    static func recordAcknowledged(messages seqs: [Int64], batches: [(seq: Int64, sent: Int)], at date: Date, in db: Database) throws {
        var acknowledged: [String: Int] = [:]
        // Statements prepared once per connection: this runs at every round the broker acknowledges.
        if !seqs.isEmpty {
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT sku, COUNT(*) FROM outbox WHERE sku IS NOT NULL AND batch = 0 AND seq IN (SELECT value FROM json_each(?)) GROUP BY sku"),
                arguments: [Outbox.jsonArray(seqs)])
            for row in rows { acknowledged[row[0] as String, default: 0] += row[1] as Int }
        }
        for batch in batches {
            let statement = try db.cachedStatement(sql: "SELECT sku, sent FROM outbox WHERE seq = ? AND sku IS NOT NULL")
            guard let row = try Row.fetchOne(statement, arguments: [batch.seq]) else {
                continue
            }
            let newly = batch.sent - (row[1] as Int)
            if newly > 0 { acknowledged[row[0] as String, default: 0] += newly }
        }
        guard !acknowledged.isEmpty else { return }
        try add(acknowledged.map { ($0.key, $0.value) }, column: "acknowledged", hour: hour(of: date), in: db)
    }

    private static func add(_ counts: [(String, Int)], column: String, hour: Int64, in db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO alertFigure (sku, hour, raised, acknowledged) VALUES (?, ?, 0, 0)
                ON CONFLICT (sku, hour) DO NOTHING
                """)
        let update = try db.cachedStatement(sql: "UPDATE alertFigure SET \(column) = \(column) + ? WHERE sku = ? AND hour = ?")
        for (sku, count) in counts {
            try statement.execute(arguments: [sku, hour])
            try update.execute(arguments: [count, sku, hour])
        }
    }

    /// Folds the hours before `hour` (but hour 0) into hour 0.
    private static func fold(before hour: Int64, in db: Database) throws {
        guard let oldest = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(hour) FROM alertFigure WHERE hour > 0")), oldest < hour else { return }
        try db.execute(
            sql: """
                INSERT INTO alertFigure (sku, hour, raised, acknowledged)
                    SELECT sku, 0, SUM(raised), SUM(acknowledged) FROM alertFigure WHERE hour > 0 AND hour < ? GROUP BY sku
                    ON CONFLICT (sku, hour) DO UPDATE SET raised = raised + excluded.raised, acknowledged = acknowledged + excluded.acknowledged;
                DELETE FROM alertFigure WHERE hour > 0 AND hour < ?;
                """, arguments: [hour, hour])
    }

    /// The figures of each SKU with a watch or an alert (or of `sku` alone), as of `now`.
    static func report(at now: Date, sku: SKU?, in db: Database) throws -> StoreReport {
        let since = ReportFigures.firstHourOfDay(endingIn: hour(of: now))
        var skus: [String: StoreReport.SKUFigures] = [:]
        let filter = sku == nil ? "" : " WHERE sku = ?"
        let arguments: StatementArguments = sku.map { [$0.rawValue] } ?? []
        for row in try Row.fetchAll(
            db, sql: "SELECT sku, COUNT(*), SUM(waiting) FROM watch\(filter) GROUP BY sku", arguments: arguments)
        {
            let name: String = row[0]
            skus[name] = StoreReport.SKUFigures(sku: name, watching: row[1], waiting: row[2] ?? 0)
        }
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT sku, SUM(raised), SUM(acknowledged), SUM(CASE WHEN hour >= ? THEN raised ELSE 0 END),
                    SUM(CASE WHEN hour >= ? THEN acknowledged ELSE 0 END) FROM alertFigure\(filter.isEmpty ? "" : filter) GROUP BY sku
                """, arguments: [since, since] + arguments)
        {
            let name: String = row[0]
            var figures = skus[name] ?? StoreReport.SKUFigures(sku: name, watching: 0, waiting: 0)
            figures.alertsRaised = StoreReport.Window(life: row[1], last24h: row[3])
            figures.alertsAcknowledged = StoreReport.Window(life: row[2], last24h: row[4])
            skus[name] = figures
        }
        let customers = try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT customer) FROM watch\(filter)", arguments: arguments) ?? 0
        return ReportFigures.report(customers: customers, skus: skus)
    }
}
