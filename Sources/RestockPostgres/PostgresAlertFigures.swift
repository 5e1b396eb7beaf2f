import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline

/// The store's figures of alerts per SKU and hour (SQLite's `AlertFigures`), in `restock_alert_figure`: hours older than
/// a day are folded into hour 0, which holds the rest of the store's life. `restock_commit` adds the alerts raised (and
/// folds), `restock_acknowledge` those acknowledged (``PostgresSchema``); this reads them.
struct PostgresAlertFigures {
    let statements: Statements
    let store: String

    /// The hour `date` falls in (``ReportFigures/hour(of:)``).
    static func hour(of date: Date) -> Int64 { ReportFigures.hour(of: date) }

    /// The first hour of the day that ends with `hour` (``ReportFigures/firstHourOfDay(endingIn:)``).
    static func firstHourOfDay(endingIn hour: Int64) -> Int64 { ReportFigures.firstHourOfDay(endingIn: hour) }

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
