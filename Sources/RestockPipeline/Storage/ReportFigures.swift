import Foundation

/// What every backend's figures of alerts share (docs/contract.md, "Reports"): the hour a count falls in, the day a
/// report's `last24h` window covers, and the report made from the figures of each SKU. The figures themselves are kept
/// per SKU and hour by the backend (SQLite: ``AlertFigures``; memory: ``InMemoryState``).
package enum ReportFigures {
    /// The hour `date` falls in: seconds since 1970 / 3600, on the store's clock (1 for a date before 1970's second
    /// hour or not finite, at most that of 10^15 seconds, so that no conversion traps).
    package static func hour(of date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= 3_600 else { return 1 }
        return Int64(min(seconds, 1e15) / 3_600)
    }

    /// The first hour of the day that ends with `hour`: the current hour and the 23 before it make `last24h`; hours
    /// before it are folded into hour 0, which holds the rest of the store's life.
    package static func firstHourOfDay(endingIn hour: Int64) -> Int64 { hour - 23 }

    /// The report of `customers` customers with a watch and the figures of each SKU (by name): the totals are the sums
    /// of the SKUs', which are listed in SKU order. A sum that would overflow stops at `Int.max`.
    package static func report(customers: Int, skus: [String: StoreReport.SKUFigures]) -> StoreReport {
        let list = skus.values.sorted { $0.sku < $1.sku }
        func total(_ value: (StoreReport.SKUFigures) -> Int) -> Int { list.reduce(0) { sum($0, value($1)) } }
        return StoreReport(
            customers: customers, watches: total(\.watching),
            alertsRaised: StoreReport.Window(life: total(\.alertsRaised.life), last24h: total(\.alertsRaised.last24h)),
            alertsAcknowledged: StoreReport.Window(life: total(\.alertsAcknowledged.life), last24h: total(\.alertsAcknowledged.last24h)),
            skus: list)
    }

    /// `a + b`, or the bound it passed when it overflows: counts never trap.
    package static func sum(_ a: Int, _ b: Int) -> Int {
        let (result, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b < 0 ? .min : .max) : result
    }
}
