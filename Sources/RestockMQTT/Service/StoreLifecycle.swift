import Logging
import RestockPipeline
import Synchronization
import Deadlines

/// The running store's state, in one place (docs/architecture.md, "Who owns which state"): whether its session
/// with the broker is up, which stages are paused because the data directory cannot be written, whether a stage
/// failed, and whether another instance took the store over. The stages change it; the heartbeat, the session watch
/// and the journal read it. Every change wakes ``changes``.
///
/// A pause (docs/operations.md, "A full disk") is logged once when it begins, then once a minute while it lasts,
/// and once when it ends.
final class StoreLifecycle: Sendable {
    /// A stage that pauses while its file cannot be written.
    /// What the outbox publisher's wait on the storage is called (``publishWait``); it has no pause of its own.
    static let publishing = "publishing the outbox"

    enum Stage: String, Sendable, CaseIterable {
        /// The journal on the session's network thread: it refuses requests, which then wait on the broker.
        case journal = "journaling requests"
        /// The applying stage: it keeps its changes and commits them again.
        case applying = "applying requests"
    }

    private struct Pause {
        var error: StorageError
        let since: ContinuousClock.Instant
        var loggedAt: ContinuousClock.Instant
        /// How far its time is counted in ``StoreMetric/pausedSeconds``.
        var countedTo: ContinuousClock.Instant
    }

    private struct State {
        var sessionConnected = false
        var pauses: [Stage: Pause] = [:]
        var failure: StoreStageError?
        var takenOverBy: String?
        var leaseLost: StorageError?
    }

    private let state = Mutex(State())
    private let logger: Logger
    /// How often a pause that lasts is logged again.
    private let pauseReport: Duration
    private let clock: ServiceClock
    private let changed: AsyncStream<Void>.Continuation
    /// Opened, and replaced by a closed one, at each change: what ``nextChange()`` hands out.
    private let changeSignal = Mutex(Latch())
    private let metrics: StoreMetrics
    /// Woken (at most one wakeup waiting) whenever something here changes.
    let changes: AsyncStream<Void>
    /// The journal's steps on the storage, the applying stage's and the outbox publisher's, timed (``StorageWait``): a
    /// storage that answers nothing fails no call, and holds the stage instead.
    let journalWait: StorageWait, applyWait: StorageWait, publishWait: StorageWait

    init(logger: Logger, timing: StoreTiming = .contract, metrics: StoreMetrics = StoreMetrics()) {
        self.logger = logger
        self.metrics = metrics
        self.pauseReport = timing.pauseReport
        self.clock = timing.clock
        journalWait = StorageWait(stage: Stage.journal.rawValue, logger: logger)
        applyWait = StorageWait(stage: Stage.applying.rawValue, logger: logger)
        publishWait = StorageWait(stage: Self.publishing, logger: logger)
        (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// What a wait for the next change waits on: take it before judging the state, then wait on it, so that no change
    /// between the two is missed.
    func nextChange() -> Latch { changeSignal.withLock { $0 } }

    /// Wakes ``changes`` and every wait on ``nextChange()``.
    private func signalChange() {
        changed.yield()
        let opened = changeSignal.withLock { latch in
            defer { latch = Latch() }
            return latch
        }
        opened.open()
    }

    // MARK: The session

    /// The store's session with the broker is up (it takes requests).
    func sessionConnected() { setSession(true) }

    /// The store's session with the broker is down: lost, dropped by the journal, or closed.
    func sessionLost() { setSession(false) }

    private func setSession(_ connected: Bool) {
        let changed = state.withLock { state in
            defer { state.sessionConnected = connected }
            return state.sessionConnected != connected
        }
        if changed { signalChange() }
    }

    var isSessionConnected: Bool { state.withLock { $0.sessionConnected } }

    /// Whether the store should say it is online now: its session is up, or it dropped the session itself because
    /// it cannot journal (a pause: it still owns the store id); and no other instance took the store over.
    var isLive: Bool {
        state.withLock { ($0.sessionConnected || $0.pauses[.journal] != nil) && $0.takenOverBy == nil && $0.failure == nil }
    }

    /// Whether what the store committed must wait before it goes out: its session was lost for a reason other than its
    /// own pause, and the session watch has not decided yet whether a newer instance took it. Messages sent then could
    /// overwrite what the newer one publishes (found by an outside trial: a store frozen with its outbox full sent it on
    /// waking, over the newer store's retained inventory).
    var holdsPublications: Bool {
        state.withLock { !$0.sessionConnected && $0.pauses[.journal] == nil && $0.failure == nil && $0.takenOverBy == nil }
    }

    // MARK: Pauses

    /// `stage` cannot write its file for now: it pauses. Logged when the pause begins, and again every
    /// ``StoreTiming/pauseReport`` while it lasts.
    func pause(_ stage: Stage, because error: StorageError) {
        let now = clock.now
        let report: (began: Bool, lasted: Duration)? = state.withLock { state in
            guard var pause = state.pauses[stage] else {
                state.pauses[stage] = Pause(error: error, since: now, loggedAt: now, countedTo: now)
                return (true, .zero)
            }
            pause.error = error
            defer { state.pauses[stage] = pause }
            guard now - pause.loggedAt >= pauseReport else { return nil }
            pause.loggedAt = now
            return (false, now - pause.since)
        }
        countPausedTime()
        guard let report else { return }
        if report.began { signalChange() }
        let metadata: Logger.Metadata = [
            StoreLoggingKeys.stage: "\(stage.rawValue)", StoreLoggingKeys.file: "\(error.path)",
            StoreLoggingKeys.free: "\(FreeSpace.bytes(near: error.path).map(FreeSpace.describe) ?? "unknown")",
        ]
        if report.began {
            logger.error(
                "paused \(stage.rawValue): \(error); the store takes no requests until it can write again (they wait in its session on the broker), and alerts already committed keep going out",
                metadata: metadata)
        } else {
            logger.error("still paused \(stage.rawValue) after \(Int(report.lasted.seconds)) s: \(error)", metadata: metadata)
        }
    }

    /// `stage` could write again: its pause, if any, ends.
    func resume(_ stage: Stage) {
        countPausedTime()
        let now = clock.now
        guard let ended = state.withLock({ $0.pauses.removeValue(forKey: stage) }) else { return }
        signalChange()
        logger.notice(
            "resumed \(stage.rawValue) after \(Int((now - ended.since).seconds)) s: \(ended.error.path) can be written again",
            metadata: [StoreLoggingKeys.stage: "\(stage.rawValue)"])
    }

    /// Adds the time each paused stage has spent paused since it was last counted to ``StoreMetric/pausedSeconds``
    /// (at each retry, at its end, and when the gauges are sampled).
    func countPausedTime() {
        let now = clock.now
        let spent = state.withLock { state in
            state.pauses.keys.map { stage in
                defer { state.pauses[stage]?.countedTo = now }
                return (stage, now - (state.pauses[stage]?.countedTo ?? now))
            }
        }
        for (stage, duration) in spent where duration > .zero {
            metrics.pausedSeconds[stage == .journal ? .journal : .apply]?.increment(by: duration.seconds)
        }
    }

    /// Why the store takes no requests now (for `/readyz`), or `nil` when it takes them, the first of: a stage failed,
    /// another instance took the store over, a stage is paused, `lease` (why the store's lease is in doubt, if it is), a
    /// stage or the outbox's publisher has waited past ``StorageWait/patience`` for the storage, its session with the
    /// broker is down. A lease in
    /// doubt goes before a wait on the storage: a standby may take over (found by an outside trial: a frozen database
    /// held both, and /readyz never said that a standby may take over).
    func notReadyReason(lease: @autoclosure () -> String? = nil) -> String? {
        let (stopped, paused, sessionDown): (String?, String?, Bool) = state.withLock { state in
            if let failure = state.failure { return ("\(failure)", nil, false) }
            if let winner = state.takenOverBy { return ("another instance (\(winner)) took the store over", nil, false) }
            for stage in Stage.allCases {
                if let pause = state.pauses[stage] { return (nil, "paused: \(stage.rawValue) is paused: \(pause.error)", false) }
            }
            return (nil, nil, !state.sessionConnected)
        }
        if let reason = stopped ?? paused ?? lease() { return reason }
        // Requests wait on a storage that answers nothing; the session stays up (found by an outside trial: 200 for the 15 s
        // of PostgreSQL's statement timeout while the store's statements waited on a frozen server).
        if let waited = journalWait.overdue {
            return "\(Stage.journal.rawValue) has waited \(StorageWait.tenths(waited)) s for the store's storage, which does not answer: requests wait on the broker until it does (see the log)"
        }
        if let waited = applyWait.overdue {
            return "\(Stage.applying.rawValue) has waited \(StorageWait.tenths(waited)) s for the store's storage, which does not answer: requests wait in the request log until it does (see the log)"
        }
        // What was committed waits to be sent (found by a stop's review: only the outbox's record of the broker's
        // acknowledgements waited on a frozen storage, and the store said 200 while it sent nothing more).
        if let waited = publishWait.overdue {
            return "\(Self.publishing) has waited \(StorageWait.tenths(waited)) s for the store's storage, which does not answer: alerts and the other messages committed wait in the outbox until it does (see the log)"
        }
        if sessionDown { return "the store's session with the broker is down: it takes no requests until it is back" }
        return nil
    }

    /// Whether `stage` is paused.
    func isPaused(_ stage: Stage) -> Bool { state.withLock { $0.pauses[stage] != nil } }

    /// Returns once the journal is not paused, trying `storage`'s log again every `interval` meanwhile (its pause
    /// logged again once a minute); throws the store's failure, when a stage failed. The store's session waits here
    /// before it is made again: while the journal is paused every message the broker delivers is refused, and the
    /// connection closed, so a session made again before would be lost again at once — at every retry, and for good
    /// at a start, where nothing else tries the log again (found by an outside trial: a store whose database stopped as
    /// it took its session never came online, and logged "broker not reachable" twice a second).
    func waitUntilTheJournalResumes(trying storage: any StoreStorage, every interval: Duration) async throws {
        while isPaused(.journal) {
            if let failure { throw failure }
            try await clock.sleep(for: interval)
            do {
                try await storage.withExecutor { try storage.probeJournal() }
                resume(.journal)
            } catch let error as StorageError where error.isRetriable {
                pause(.journal, because: error)  // logged again once a minute
            }
        }
        if let failure { throw failure }
    }

    /// Why the store takes no requests for now, for its status: `nil` when no stage is paused.
    var pauseReason: String? {
        state.withLock { state in
            Stage.allCases.compactMap { stage in state.pauses[stage].map { "\(stage.rawValue) is paused: \($0.error)" } }.first
        }
    }

    // MARK: The end

    /// A stage failed for good: the store stops (after publishing what is committed) and exits with `error`. A stage
    /// that failed because a newer owner holds the data directory's lease (the journal) loses the lease instead.
    func fail(_ error: StoreStageError) {
        if let lost = error.cause as? StorageError, lost.kind == .leaseLost { return loseLease(lost) }
        state.withLock { $0.failure = $0.failure ?? error }
        signalChange()
    }

    /// The first stage failure, if any.
    var failure: StoreStageError? { state.withLock { $0.failure } }

    /// Another instance took the store over: the store applies nothing more and stops without saying offline.
    func takenOver(by instance: String) {
        state.withLock { $0.takenOverBy = $0.takenOverBy ?? instance }
        signalChange()
    }

    /// The instance that took the store over, if one did.
    var takenOverBy: String? { state.withLock { $0.takenOverBy } }

    /// A newer owner holds the data directory's lease (`error`, of kind ``StorageError/Kind/leaseLost``): as a takeover,
    /// the store writes, applies and publishes nothing more, and stops without draining or saying offline.
    func loseLease(_ error: StorageError) {
        state.withLock { state in
            state.leaseLost = state.leaseLost ?? error
            state.takenOverBy = state.takenOverBy ?? error.leaseLost?.owner ?? "?"
        }
        signalChange()
    }

    /// Whether this process still holds `ownership`, read from the storage: a loss is noted here (``loseLease(_:)``) and
    /// answered `false`; a lease that cannot be read now (a lock, a full disk) counts as held, its renewal decides. What
    /// the heartbeat asks before each beat, the publisher before each round, and the write gate after a failed renewal.
    func stillHolds(_ ownership: any StoreOwnership) -> Bool {
        do {
            try ownership.check()
        } catch where error.kind == .leaseLost {
            loseLease(error)
            return false
        } catch {}
        return true
    }

    /// Why the store lost its data directory's lease, if it did.
    var leaseLost: StorageError? { state.withLock { $0.leaseLost } }
}

/// A stage of the running store failed for good; the store stopped.
struct StoreStageError: Error, CustomStringConvertible {
    /// What the stage was doing: "applying requests", "publishing the outbox".
    let stage: String
    /// The error it failed with.
    let cause: any Error

    var description: String { "the store stopped: \(stage) failed: \(cause)" }
}
