import CoreMetrics
import Metrics
import RestockCore

/// The handles of the store's metrics (``StoreMetric``), made once per store service through swift-metrics: with no
/// backend bootstrapped they cost nothing. Each series of a labelled metric is made up front, so that Prometheus
/// sees it at 0 before it first moves.
package final class StoreMetrics: Sendable {
    /// A request's kind, as the `kind` label of ``StoreMetric/requestsApplied`` names it.
    package enum RequestKind: String, Sendable, CaseIterable {
        case subscribe, unsubscribe, unsubscribeAll = "unsubscribe-all", stock, forget, deadLetter = "dead-letter"
    }

    /// A window of the report's figures, as the `window` label names it.
    package enum Window: String, Sendable, CaseIterable {
        case life
        case last24h = "24h"
    }

    /// A connection to the broker, as the `connection` label names it.
    package enum Connection: String, Sendable, CaseIterable {
        /// The store's persistent session: it takes the requests.
        case session
        /// This instance's publishing connection.
        case publishing
    }

    /// A stage that pauses, as the `stage` label of ``StoreMetric/pausedSeconds`` names it.
    package enum PausedStage: String, Sendable, CaseIterable {
        case journal, apply
    }

    package let requestsJournaled: Counter
    package let requestsApplied: [RequestKind: Counter]
    package let requestsRefused: [RefusalCode: Counter]
    package let alertsRaised: Counter
    package let alertsPublished: Counter
    package let alertsAcknowledged: Counter
    package let deadLetters: Counter
    package let watchesExpired: Counter
    package let customersForgotten: Counter
    package let observerAlertsDropped: Counter
    package let observerFailures: Counter
    package let reportAlertsRaised: [Window: Gauge]
    package let reportAlertsAcknowledged: [Window: Gauge]
    package let reportCustomers: Gauge
    package let outboxDepth: Gauge
    package let journalLag: Gauge
    package let publicationsHeld: Gauge
    package let watches: Gauge
    package let watchesMaximum: Gauge
    package let customers: Gauge
    package let applyDuration: CoreMetrics.Timer
    package let commitDuration: CoreMetrics.Timer
    package let acknowledgementDuration: CoreMetrics.Timer
    package let brokerConnected: [Connection: Gauge]
    package let brokerReconnects: [Connection: Counter]
    package let pausedSeconds: [PausedStage: FloatingPointCounter]
    package let leaseEpoch: Gauge
    package let leaseAge: Gauge

    /// The handles, from the factory swift-metrics was bootstrapped with.
    package init() {
        func labelled<Key: RawRepresentable & CaseIterable, Handle>(
            _ metric: StoreMetric, _ make: (String, [(String, String)]) -> Handle
        ) -> [Key: Handle] where Key.RawValue == String {
            Dictionary(uniqueKeysWithValues: Key.allCases.map { ($0, make(metric.name, [(metric.label ?? "", $0.rawValue)])) })
        }
        requestsJournaled = Counter(label: StoreMetric.requestsJournaled.name)
        requestsApplied = labelled(.requestsApplied) { Counter(label: $0, dimensions: $1) }
        requestsRefused = labelled(.requestsRefused) { Counter(label: $0, dimensions: $1) }
        alertsRaised = Counter(label: StoreMetric.alertsRaised.name)
        alertsPublished = Counter(label: StoreMetric.alertsPublished.name)
        alertsAcknowledged = Counter(label: StoreMetric.alertsAcknowledged.name)
        deadLetters = Counter(label: StoreMetric.deadLetters.name)
        watchesExpired = Counter(label: StoreMetric.watchesExpired.name)
        customersForgotten = Counter(label: StoreMetric.customersForgotten.name)
        observerAlertsDropped = Counter(label: StoreMetric.observerAlertsDropped.name)
        observerFailures = Counter(label: StoreMetric.observerFailures.name)
        reportAlertsRaised = labelled(.reportAlertsRaised) { Gauge(label: $0, dimensions: $1) }
        reportAlertsAcknowledged = labelled(.reportAlertsAcknowledged) { Gauge(label: $0, dimensions: $1) }
        reportCustomers = Gauge(label: StoreMetric.reportCustomers.name)
        outboxDepth = Gauge(label: StoreMetric.outboxDepth.name)
        journalLag = Gauge(label: StoreMetric.journalLag.name)
        publicationsHeld = Gauge(label: StoreMetric.publicationsHeld.name)
        watches = Gauge(label: StoreMetric.watches.name)
        watchesMaximum = Gauge(label: StoreMetric.watchesMaximum.name)
        customers = Gauge(label: StoreMetric.customers.name)
        applyDuration = CoreMetrics.Timer(label: StoreMetric.applyDuration.name)
        commitDuration = CoreMetrics.Timer(label: StoreMetric.commitDuration.name)
        acknowledgementDuration = CoreMetrics.Timer(label: StoreMetric.acknowledgementDuration.name)
        brokerConnected = labelled(.brokerConnected) { Gauge(label: $0, dimensions: $1) }
        brokerReconnects = labelled(.brokerReconnects) { Counter(label: $0, dimensions: $1) }
        pausedSeconds = labelled(.pausedSeconds) { FloatingPointCounter(label: $0, dimensions: $1) }
        leaseEpoch = Gauge(label: StoreMetric.leaseEpoch.name)
        leaseAge = Gauge(label: StoreMetric.leaseAge.name)
        for gauge in brokerConnected.values { gauge.record(0) }
    }

    /// Shows what keeps the store's state (`sqlite`, `postgresql`).
    package func recordStorage(engine: String) {
        let metric = StoreMetric.storageInfo
        Gauge(label: metric.name, dimensions: [(metric.label ?? "", engine)]).record(1)
    }

    /// Shows that the store's session is on `broker` now, and no longer on `previous`.
    package func recordBroker(_ broker: String, previous: String?) {
        let metric = StoreMetric.brokerCurrent
        if let previous, previous != broker { Gauge(label: metric.name, dimensions: [(metric.label ?? "", previous)]).record(0) }
        Gauge(label: metric.name, dimensions: [(metric.label ?? "", broker)]).record(1)
    }

    /// Shows a report's store-wide figures (the per-SKU ones are in the report only: one series per SKU would grow
    /// without bound).
    package func record(_ report: StoreReport) {
        reportAlertsRaised[.life]?.record(report.alertsRaised.life)
        reportAlertsRaised[.last24h]?.record(report.alertsRaised.last24h)
        reportAlertsAcknowledged[.life]?.record(report.alertsAcknowledged.life)
        reportAlertsAcknowledged[.last24h]?.record(report.alertsAcknowledged.last24h)
        reportCustomers.record(report.customers)
    }

    /// Reports what one applied batch did: one increment per kind, code and total, not one per request.
    package func record(_ tally: BatchTally) {
        for (kind, count) in tally.applied where count > 0 { requestsApplied[kind]?.increment(by: count) }
        for (code, count) in tally.refused where count > 0 { requestsRefused[code]?.increment(by: count) }
        if tally.alerts > 0 { alertsRaised.increment(by: tally.alerts) }
    }
}

/// What the requests of one batch did, counted as they are applied and reported once (``StoreMetrics/record(_:)``).
package struct BatchTally: Sendable {
    package var applied: [StoreMetrics.RequestKind: Int] = [:]
    package var refused: [RefusalCode: Int] = [:]
    package var alerts = 0

    package init() {}
}
