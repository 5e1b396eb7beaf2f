import Deadlines
import Logging
import RestockPipeline
import ServiceLifecycle
import Synchronization

/// The last request the journal wrote to the request log, set on the session's network thread and read by the lag
/// watch: with the last request applied, how far the store is behind.
final class JournalMark: Sendable {
    private let last = Atomic<Int64>(0)

    /// The journal wrote requests up to `seq`.
    func journaled(through seq: Int64) { last.store(seq, ordering: .relaxed) }

    /// The last request journaled (0 before the first, in this process).
    var journaledThrough: Int64 { last.load(ordering: .relaxed) }

    /// Requests journaled and not yet applied, when requests up to `applied` are.
    func lag(applied: Int64) -> Int64 { max(0, journaledThrough - applied) }
}

/// When the journal lag (requests journaled but not yet applied) is worth a log line: once when it passes the threshold,
/// again every `reportEvery` while it lasts, and once when it is back under a tenth of it.
struct LagReport {
    /// What to log.
    enum Event: Equatable {
        /// Past the threshold: for the first time (`lasted` zero), or still.
        case behind(lag: Int64, lasted: Duration)
        /// Back under the threshold, after this long.
        case caughtUp(lag: Int64, lasted: Duration)
    }

    let threshold: Int64
    let reportEvery: Duration
    private var behindSince: ContinuousClock.Instant?
    private var reportedAt: ContinuousClock.Instant?

    init(threshold: Int64, reportEvery: Duration) {
        self.threshold = threshold
        self.reportEvery = reportEvery
    }

    /// The lag now is `lag`: what to log, if anything. Once behind, the store is back only under a tenth of the
    /// threshold, so that a lag hovering about the threshold (requests come in bursts) is one episode, not a line pair
    /// every second.
    mutating func observe(_ lag: Int64, at now: ContinuousClock.Instant) -> Event? {
        guard lag > (behindSince == nil ? threshold : threshold / 10) else {
            guard let since = behindSince else { return nil }
            (behindSince, reportedAt) = (nil, nil)
            return .caughtUp(lag: lag, lasted: now - since)
        }
        guard let since = behindSince, let reported = reportedAt else {
            (behindSince, reportedAt) = (now, now)
            return .behind(lag: lag, lasted: .zero)
        }
        guard now - reported >= reportEvery else { return nil }
        reportedAt = now
        return .behind(lag: lag, lasted: now - since)
    }
}

/// Watches how far the applying stage is behind the journal (docs/operations.md, "Logs"): past
/// ``StoreService/lagWarningThreshold`` requests it logs a warning with the figure, at most once a
/// ``StoreTiming/pauseReport`` while it lasts, and a notice once it is back under. Nothing else reports a backlog: the
/// requests are safe in the log, but alerts and confirmations come late.
struct JournalLagWatch: Service {
    let mark: JournalMark
    /// The last request applied.
    let applied: @Sendable () -> Int64
    let threshold: Int64
    let checkEvery: Duration
    let reportEvery: Duration
    let clock: ServiceClock
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var report = LagReport(threshold: threshold, reportEvery: reportEvery)
            while true {
                try await clock.sleep(for: checkEvery)
                let lag = mark.lag(applied: applied())
                if let event = report.observe(lag, at: clock.now) { log(event) }
            }
        }
    }

    private func log(_ event: LagReport.Event) {
        switch event {
        case .behind(let lag, let lasted) where lasted == .zero:
            logger.warning(
                "the store is \(lag) requests behind the journal: they are safe in the request log, but their alerts and confirmations come late",
                metadata: [StoreLoggingKeys.lag: "\(lag)"])
        case .behind(let lag, let lasted):
            logger.warning(
                "the store is still \(lag) requests behind the journal, after \(Int(lasted.seconds)) s", metadata: [StoreLoggingKeys.lag: "\(lag)"])
        case .caughtUp(let lag, let lasted):
            logger.notice(
                "the store caught up with the journal after \(Int(lasted.seconds)) s (\(lag) requests behind)",
                metadata: [StoreLoggingKeys.lag: "\(lag)"])
        }
    }
}
