import Logging
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle

/// Samples the store's gauges every `interval` (docs/operations.md, "Health and metrics"): the journal lag, the messages
/// held by the delivery fence, the watches and customers, and the time spent paused so far, all read from memory; and,
/// in a loop of its own, the outbox's depth, which is read on the pipeline's thread. Sampled, not kept up to date on the
/// path of each request.
///
/// The two loops are apart so that the pipeline's thread, busy applying a backlog (it applies everything waiting
/// before it returns: seconds for tens of thousands of requests), holds back only the outbox's figure: the others move
/// meanwhile (issue 32: every gauge froze for about 6 s while a store 80,000 requests behind caught up).
struct GaugeSampler: Service {
    let metrics: StoreMetrics
    let mark: JournalMark
    /// The last request applied.
    let applied: @Sendable () -> Int64
    let store: Store
    let storage: any StoreStorage
    let lifecycle: StoreLifecycle
    let fence: DeliveryFence
    let interval: Duration
    /// The most watches the store holds (`--max-watches`; `nil`: no limit).
    let maximumWatches: Int?
    /// How often a store that stays full says so again.
    let fullReportEvery: Duration
    let logger: Logger
    /// Where the lease's age is read (``StoreHealth/leaseAge``).
    let health: StoreHealth

    func run() async throws {
        metrics.watchesMaximum.record(maximumWatches ?? 0)
        try? await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await sampleMemory() }
                group.addTask { try await sampleOutbox() }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// The gauges read from memory, never waiting on the pipeline.
    private func sampleMemory() async throws {
        var full = FullReport(every: fullReportEvery)
        while true {
            let watches = store.watchCount
            if let maximumWatches, let line = full.observe(watches: watches, maximum: maximumWatches, at: .now) {
                logger.log(level: line.level, "\(line.message)", metadata: [StoreLoggingKeys.watches: "\(watches)"])
            }
            metrics.journalLag.record(mark.lag(applied: applied()))
            metrics.publicationsHeld.record(fence.heldCount)
            metrics.watches.record(watches)
            metrics.customers.record(store.customerCount)
            lifecycle.countPausedTime()
            if let age = health.leaseAge { metrics.leaseAge.record(age) }
            try await Task.sleep(for: interval)
        }
    }

    /// The outbox's depth, read on the pipeline's thread: late while the pipeline is busy.
    private func sampleOutbox() async throws {
        while true {
            // A store that cannot read its outbox now (a lock) keeps the last figure.
            if let depth = try? await storage.withExecutor({ try storage.outboxDepth() }) {
                metrics.outboxDepth.record(depth)
            }
            try await Task.sleep(for: interval)
        }
    }
}

/// When a store at its `--max-watches` is worth a log line: a warning when it becomes full, again every `every` while it
/// stays full, and a notice once it is under 99 % of the limit again.
struct FullReport {
    let every: Duration
    private var fullSince: ContinuousClock.Instant?
    private var reportedAt: ContinuousClock.Instant?

    init(every: Duration) { self.every = every }

    mutating func observe(watches: Int, maximum: Int, at now: ContinuousClock.Instant) -> (level: Logger.Level, message: String)? {
        if watches >= maximum {
            if let reported = reportedAt, now - reported < every { return nil }
            let first = fullSince == nil
            if first { fullSince = now }
            reportedAt = now
            return (
                .warning,
                "the store is full: it holds \(watches) watches, its --max-watches is \(maximum); new watches are refused store-full"
                    + (first ? "" : " (for \(Int((now - (fullSince ?? now)).seconds)) s)"))
        }
        guard let since = fullSince, watches < maximum - maximum / 100 else { return nil }
        (fullSince, reportedAt) = (nil, nil)
        return (.notice, "the store is no longer full after \(Int((now - since).seconds)) s: it holds \(watches) watches of \(maximum)")
    }
}

extension StoreMetrics {
    /// Reports a connection's event: whether it is up, and each connection after the first as a reconnect.
    func count(_ event: MQTTConnectionEvent, on connection: Connection, connections: inout Int) {
        switch event {
        case .connected:
            connections += 1
            brokerConnected[connection]?.record(1)
            if connections > 1 { brokerReconnects[connection]?.increment() }
        case .connectionLost, .disconnected:
            brokerConnected[connection]?.record(0)
        }
    }
}
