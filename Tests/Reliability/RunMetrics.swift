import Foundation
import LocalBroker
import RestockTestSupport

/// The run's metrics, read back from a real Prometheus (Debian's `prometheus`) that scraped every store of every
/// scenario (``ScrapedStores``) every 250 ms: what the stores themselves counted, beside the table of what the
/// scenarios saw (docs/reliability.md). Without `prometheus` on the PATH the run goes on without it, and says so.
enum RunMetrics {
    /// A Prometheus scraping the stores launched from now on, or `nil` (said why) when it cannot start.
    static func start() async -> PrometheusServer? {
        do {
            let directory = try temporaryDirectory("scrape-targets")
            let targets = directory.appendingPathComponent("stores.json")
            try ScrapedStores.enable(targetsFile: targets)
            let server = try await PrometheusServer.start(scrapingTargetsIn: targets, every: "250ms")
            say("metrics: every store serves /metrics (--http 127.0.0.1:0); Prometheus at \(server.url) scrapes each every 250 ms")
            return server
        } catch {
            say("metrics: not read back (Prometheus did not start: \(error))")
            return nil
        }
    }

    /// What is read back, per scenario: each store process's largest value of a counter, summed (a store that
    /// restarts is a new series, so nothing is counted twice; a store killed or stopped loses what it counted since its last scrape).
    static let columns: [(title: String, expression: String)] = [
        ("stores scraped", "count by (scenario) (max_over_time(up[3h]))"),
        ("requests journaled", "sum by (scenario) (max_over_time(restock_requests_journaled_total[3h]))"),
        ("applied", "sum by (scenario) (max_over_time(restock_requests_applied_total[3h]))"),
        ("refused", "sum by (scenario) (max_over_time(restock_requests_refused_total[3h]))"),
        ("alerts raised", "sum by (scenario) (max_over_time(restock_alerts_raised_total[3h]))"),
        ("published", "sum by (scenario) (max_over_time(restock_alerts_published_total[3h]))"),
        ("acknowledged", "sum by (scenario) (max_over_time(restock_alerts_acknowledged_total[3h]))"),
        ("dead letters", "sum by (scenario) (max_over_time(restock_dead_letters_total[3h]))"),
        ("reconnects", "sum by (scenario) (max_over_time(restock_broker_reconnects_total[3h]))"),
        ("paused s", "sum by (scenario) (max_over_time(restock_paused_seconds_total[3h]))"),
        ("most lag", "max by (scenario) (max_over_time(restock_journal_lag_requests[3h]))"),
    ]

    /// The table of ``columns`` by scenario, in markdown, with the queries under it.
    static func table(from prometheus: PrometheusServer, scenarios: [String]) async -> String {
        // Every scenario has stopped its stores by now: what Prometheus holds is final.
        var values: [[String: Double]] = []
        for column in columns {
            values.append((try? await prometheus.query(column.expression, byLabel: "scenario")) ?? [:])
        }
        func cell(_ value: Double?) -> String { value.map { $0.formatted(.number.precision(.fractionLength(0))) } ?? "–" }
        var lines = [
            "Read back from Prometheus after the run (each store's /metrics, scraped every 250 ms; – where no store of the scenario served that metric):",
            "",
            "| scenario | " + columns.map(\.title).joined(separator: " | ") + " |",
            "|---|" + columns.map { _ in "---:|" }.joined(),
        ]
        for scenario in scenarios where values.contains(where: { $0[scenario] != nil }) {
            lines.append("| \(scenario) | " + values.map { cell($0[scenario]) }.joined(separator: " | ") + " |")
        }
        lines.append("")
        lines.append("Queries: `max_over_time(METRIC[3h])` per store process, summed `by (scenario)` (the most lag: the largest).")
        return lines.joined(separator: "\n")
    }
}
