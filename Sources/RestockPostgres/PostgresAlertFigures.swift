import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline

/// The store's figures of alerts per SKU and hour (SQLite's `AlertFigures`), in `restock_alert_figure`: hours older than
/// a day are folded into hour 0, which holds the rest of the store's life.
struct PostgresAlertFigures {
    let statements: Statements
    let store: String

    /// The hour `date` falls in (``ReportFigures/hour(of:)``).
    static func hour(of date: Date) -> Int64 { ReportFigures.hour(of: date) }

    /// The first hour of the day that ends with `hour` (``ReportFigures/firstHourOfDay(endingIn:)``).
    static func firstHourOfDay(endingIn hour: Int64) -> Int64 { ReportFigures.firstHourOfDay(endingIn: hour) }

    /// Adds `raised` alerts per SKU (a count of 0 too: the SKU then has figures) to the hour of `date`, and folds the
    /// hours older than a day into hour 0.
    func record(raised: [SKU: Int], at date: Date) throws {
        guard !raised.isEmpty else { return }
        let hour = Self.hour(of: date)
        try add(raised.map { ($0.key.rawValue, $0.value) }, column: "raised", hour: hour)
        let before = Self.firstHourOfDay(endingIn: hour)
        try statements.execute(
            """
            WITH folded AS (
                DELETE FROM restock_alert_figure WHERE store = \(store) AND hour > 0 AND hour < \(before)
                RETURNING sku, raised, acknowledged)
            INSERT INTO restock_alert_figure (store, sku, hour, raised, acknowledged)
            SELECT \(store), sku, 0, SUM(raised)::int8, SUM(acknowledged)::int8 FROM folded GROUP BY sku
            ON CONFLICT (store, sku, hour) DO UPDATE SET raised = restock_alert_figure.raised + excluded.raised,
                acknowledged = restock_alert_figure.acknowledged + excluded.acknowledged
            """)
    }

    /// Adds the alerts the broker acknowledged, per SKU, to the hour of `date`.
    func recordAcknowledged(_ counts: [String: Int], at date: Date) throws {
        guard !counts.isEmpty else { return }
        try add(counts.map { ($0.key, $0.value) }, column: "acknowledged", hour: Self.hour(of: date))
    }

    private func add(_ counts: [(String, Int)], column: String, hour: Int64) throws {
        let skus = counts.map(\.0), numbers = counts.map { Int64($0.1) }
        try statements.execute(
            """
            INSERT INTO restock_alert_figure (store, sku, hour, raised, acknowledged)
            SELECT \(store), s, \(hour), 0, 0 FROM unnest(\(skus)::text[]) AS s ON CONFLICT (store, sku, hour) DO NOTHING
            """)
        try statements.execute(
            """
            UPDATE restock_alert_figure AS f SET \(unescaped: column) = f.\(unescaped: column) + c.n
            FROM unnest(\(skus)::text[], \(numbers)::int8[]) AS c(s, n) WHERE f.store = \(store) AND f.sku = c.s AND f.hour = \(hour)
            """)
    }

    /// The figures of each SKU with a watch or an alert (or of `sku` alone), as of `now` (docs/contract.md, "Reports").
    func report(at now: Date, sku: SKU?) throws -> StoreReport {
        let since = Self.firstHourOfDay(endingIn: Self.hour(of: now))
        let name = sku?.rawValue
        var skus: [String: StoreReport.SKUFigures] = [:]
        for row in try statements.query(
            """
            SELECT sku, COUNT(*)::int8, SUM(CASE WHEN waiting THEN 1 ELSE 0 END)::int8 FROM restock_watch
            WHERE store = \(store) AND (\(name)::text IS NULL OR sku = \(name)) GROUP BY sku
            """)
        {
            let (sku, watching, waiting) = try row.decode((String, Int64, Int64).self)
            skus[sku] = StoreReport.SKUFigures(sku: sku, watching: Int(watching), waiting: Int(waiting))
        }
        for row in try statements.query(
            """
            SELECT sku, SUM(raised)::int8, SUM(acknowledged)::int8, SUM(CASE WHEN hour >= \(since) THEN raised ELSE 0 END)::int8,
                SUM(CASE WHEN hour >= \(since) THEN acknowledged ELSE 0 END)::int8
            FROM restock_alert_figure WHERE store = \(store) AND (\(name)::text IS NULL OR sku = \(name)) GROUP BY sku
            """)
        {
            let (sku, raised, acknowledged, raisedToday, acknowledgedToday) = try row.decode((String, Int64, Int64, Int64, Int64).self)
            var figures = skus[sku] ?? StoreReport.SKUFigures(sku: sku, watching: 0, waiting: 0)
            figures.alertsRaised = StoreReport.Window(life: Int(raised), last24h: Int(raisedToday))
            figures.alertsAcknowledged = StoreReport.Window(life: Int(acknowledged), last24h: Int(acknowledgedToday))
            skus[sku] = figures
        }
        let customers = try statements.query(
            "SELECT COUNT(DISTINCT customer)::int8 FROM restock_watch WHERE store = \(store) AND (\(name)::text IS NULL OR sku = \(name))")
        return ReportFigures.report(customers: Int(try customers.first?.decode(Int64.self) ?? 0), skus: skus)
    }
}
