/// One metric the store reports through swift-metrics: its Prometheus name, its type and its help line
/// (docs/operations.md, "Health and metrics"). The library only calls swift-metrics' API; the executable that
/// runs a store chooses the backend (`restock serve --http` bootstraps swift-prometheus) and takes the help lines
/// from ``all``.
public struct StoreMetric: Sendable, Hashable {
    /// How a metric behaves, as Prometheus names it.
    public enum Kind: String, Sendable {
        /// Only goes up (a swift-metrics `Counter` or `FloatingPointCounter`).
        case counter
        /// Goes up and down (a swift-metrics `Gauge`).
        case gauge
        /// Durations in buckets (a swift-metrics `Timer`).
        case histogram
    }

    /// The Prometheus name: `restock_`, base units, `_total` for a counter.
    public let name: String
    /// Its type.
    public let kind: Kind
    /// One sentence: what it counts or measures.
    public let help: String

    /// The label a metric's series are told apart by, if any.
    public let label: String?

    init(_ name: String, _ kind: Kind, label: String? = nil, _ help: String) {
        self.name = name
        self.kind = kind
        self.label = label
        self.help = help
    }

    /// Requests written to the request log (and so acknowledged to the broker).
    public static let requestsJournaled = StoreMetric(
        "restock_requests_journaled_total", .counter, "Requests written to the request log and acknowledged to the broker.")
    /// Requests applied to the store, by kind.
    public static let requestsApplied = StoreMetric(
        "restock_requests_applied_total", .counter, label: "kind",
        "Requests applied to the store, by kind (subscribe, unsubscribe, unsubscribe-all, stock, forget, dead-letter).")
    /// Requests refused, by refusal code.
    public static let requestsRefused = StoreMetric(
        "restock_requests_refused_total", .counter, label: "code", "Requests refused and changing nothing, by refusal code.")
    /// Alerts raised by stock changes.
    public static let alertsRaised = StoreMetric("restock_alerts_raised_total", .counter, "Alerts raised by stock changes and committed.")
    /// Alerts sent to the broker (again after a lost connection or a restart).
    public static let alertsPublished = StoreMetric(
        "restock_alerts_published_total", .counter, "Alerts sent to the broker, counting each resend after a lost connection.")
    /// Alerts the broker acknowledged.
    public static let alertsAcknowledged = StoreMetric(
        "restock_alerts_acknowledged_total", .counter, "Alerts the broker acknowledged (PUBACK) and the store forgot.")
    /// Messages committed and not yet acknowledged.
    public static let outboxDepth = StoreMetric(
        "restock_outbox_messages", .gauge, "Messages (alerts, mirrors, inventory, error reports) committed and not yet acknowledged by the broker.")
    /// Requests journaled and not yet applied.
    public static let journalLag = StoreMetric(
        "restock_journal_lag_requests", .gauge, "Requests journaled (acknowledged) and not yet applied to the store.")
    /// Messages committed and held until the broker confirms the requests they follow from (``DeliveryFence``).
    public static let publicationsHeld = StoreMetric(
        "restock_publications_held_messages", .gauge,
        "Messages committed and held until the broker confirms it took the acknowledgements of the requests they follow from (docs/contract.md, \"One store per store id\").")
    /// How long applying a batch of requests to the store took.
    public static let applyDuration = StoreMetric(
        "restock_apply_duration_seconds", .histogram, "Time to apply one batch of requests to the store, before its commit.")
    /// How long committing a batch took.
    public static let commitDuration = StoreMetric(
        "restock_commit_duration_seconds", .histogram, "Time to commit one batch (state, outbox, progress) to store.sqlite, or to the database.")
    /// How long the broker took to acknowledge a round of publishes.
    public static let acknowledgementDuration = StoreMetric(
        "restock_publish_acknowledgement_duration_seconds", .histogram,
        "Time from sending a round of messages to the broker's acknowledgement of its last one.")
    /// Whether each connection to the broker is up.
    public static let brokerConnected = StoreMetric(
        "restock_broker_connected", .gauge, label: "connection",
        "1 while the connection to the broker is up, 0 while it is down (session: takes requests; publishing: sends what is committed).")
    /// Connections to the broker made again after a loss.
    public static let brokerReconnects = StoreMetric(
        "restock_broker_reconnects_total", .counter, label: "connection", "Connections to the broker made again after it was lost.")
    /// The broker of the `--broker` list the store's session is on.
    public static let brokerCurrent = StoreMetric(
        "restock_broker_current", .gauge, label: "broker",
        "1 for the broker of the --broker list the store's session is on (the broker label is its URL), 0 for one it was on before.")
    /// Watches stored.
    public static let watches = StoreMetric("restock_watches", .gauge, "Watches the store holds.")
    /// The most watches the store holds (`--max-watches`), 0 for no limit.
    public static let watchesMaximum = StoreMetric(
        "restock_watches_max", .gauge, "The most watches the store holds, all customers together (--max-watches); 0 when there is no limit.")
    /// Customers with at least one watch.
    public static let customers = StoreMetric("restock_customers", .gauge, "Customers watching at least one SKU.")
    /// Requests set aside in the dead-letter table.
    public static let deadLetters = StoreMetric(
        "restock_dead_letters_total", .counter, "Requests that made the store fail and were set aside in the dead-letter table.")
    /// Seconds a stage spent paused because its file could not be written.
    public static let pausedSeconds = StoreMetric(
        "restock_paused_seconds_total", .counter, label: "stage",
        "Seconds a stage spent paused because its file could not be written (a full disk, a lock): journal or apply.")

    /// Watches ended by their `expiresAt`.
    public static let watchesExpired = StoreMetric(
        "restock_watches_expired_total", .counter, "Watches that reached their expiresAt and ended unalerted.")

    /// Customers forgotten by an admin's forget request.
    public static let customersForgotten = StoreMetric(
        "restock_customers_forgotten_total", .counter, "Customers forgotten by an admin's forget request (every watch and row about them removed).")

    /// The report's alerts raised, every SKU together.
    public static let reportAlertsRaised = StoreMetric(
        "restock_report_alerts_raised", .gauge, label: "window",
        "Alerts raised, as the store's report counts them (restock report): over the data directory's life, or the last 24 h.")
    /// The report's alerts acknowledged, every SKU together.
    public static let reportAlertsAcknowledged = StoreMetric(
        "restock_report_alerts_acknowledged", .gauge, label: "window",
        "Alerts the broker acknowledged, as the store's report counts them (restock report): over the data directory's life, or the last 24 h.")
    /// The report's customers.
    public static let reportCustomers = StoreMetric(
        "restock_report_customers", .gauge, "Customers with a watch, as the store's report counts them (restock report).")

    /// Committed alerts dropped for in-process observers of an embedded store, because too many waited for them.
    public static let observerAlertsDropped = StoreMetric(
        "restock_observer_alerts_dropped_total", .counter,
        "Committed alerts not handed to in-process observers of an embedded store (docs/embedding.md) because 100,000 already waited for them; the broker still gets every one.")
    /// Errors thrown by in-process observers.
    public static let observerFailures = StoreMetric(
        "restock_observer_failures_total", .counter, "Errors thrown by in-process observers of an embedded store (docs/embedding.md).")
    /// HTTP connections open on the operator's endpoint (`restock serve --http`).
    public static let httpConnections = StoreMetric(
        "restock_http_connections", .gauge, "HTTP connections open on the store's /livez, /readyz and /metrics endpoint.")
    /// HTTP connections refused because the endpoint held as many as it may.
    public static let httpConnectionsRefused = StoreMetric(
        "restock_http_connections_refused_total", .counter,
        "HTTP connections answered 503 and closed because the endpoint held as many as it may (its share of the descriptor limit).")
    /// HTTP connections closed by the endpoint: idle, too slow to send a request's head, or left open after their answer.
    public static let httpConnectionsTimedOut = StoreMetric(
        "restock_http_connections_timed_out_total", .counter,
        "HTTP connections the endpoint closed: idle past the keep-alive timeout, too slow to send a request's head, or left half-open after their answer.")

    /// The epoch of the store's lease this process holds.
    public static let leaseEpoch = StoreMetric(
        "restock_lease_epoch", .gauge,
        "The epoch of the store's lease this process holds: it rises by one with every new owner (a standby's takeover).")
    /// Seconds since this process last renewed the store's lease.
    public static let leaseAge = StoreMetric(
        "restock_lease_age_seconds", .gauge,
        "Seconds since this process last renewed the store's lease (every second); a standby takes the store over past 5.")
    /// What keeps the store's state.
    public static let storageInfo = StoreMetric(
        "restock_storage_info", .gauge, label: "engine",
        "1 for what keeps the store's state: the engine label is sqlite (the data directory) or postgresql (--database).")

    /// Every metric the store reports.
    public static let all: [StoreMetric] = [
        requestsJournaled, requestsApplied, requestsRefused, alertsRaised, alertsPublished, alertsAcknowledged, outboxDepth,
        journalLag, publicationsHeld, applyDuration, commitDuration, acknowledgementDuration, brokerConnected, brokerReconnects,
        brokerCurrent, watches, watchesMaximum, customers,
        deadLetters, pausedSeconds, watchesExpired, customersForgotten, reportAlertsRaised,
        reportAlertsAcknowledged, reportCustomers, observerAlertsDropped, observerFailures, httpConnections, httpConnectionsRefused,
        httpConnectionsTimedOut, leaseEpoch, leaseAge, storageInfo,
    ]
}
