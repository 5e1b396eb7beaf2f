import Foundation
import Logging
import Metrics
import RestockCore
import Synchronization

/// The applying stage of the store's pipeline: takes journaled requests in order — from memory, as the network
/// thread passes them on, or from the request log at start-up — applies them to the in-process ``Store``, and
/// commits each batch — the state it changed, the alerts and mirrors to publish, and how far the log is applied —
/// in one transaction; then passes the committed messages on to the publishing stage, in memory.
///
/// Only the store service's applying stage calls it, on the store's SQLite thread, so the store and its
/// database never disagree about the order of changes.
package final class RequestProcessor: Sendable {
    let store: Store
    let topics: RestockTopics
    let storage: any StoreStorage
    let logger: Logger
    let clock: @Sendable () -> Date
    /// Where journaled requests arrive in memory.
    let requests: HandOff<JournaledRequest>
    /// Where committed messages go on to the publisher: through the fence, when the store has one.
    let committed: HandOff<CommittedPublication>
    /// Holds committed messages until the requests they follow from are confirmed delivered to this store alone
    /// (``DeliveryFence``); `nil`: they go on at once.
    let fence: DeliveryFence?
    /// Requests applied and refused, alerts raised, dead letters, and the time to apply and commit a batch.
    let metrics: StoreMetrics
    /// Where each committed batch's alerts go to in-process observers; `nil`: nowhere.
    let view: StoreView?
    /// Timed around each step that waits on the storage (a read of the log, a batch applied and committed), for
    /// readiness: a storage that answers nothing holds the step, and fails no call.
    let storageWait: StorageWait

    /// How many times the store may be killed without a fault while applying one suspect alone before the
    /// suspect is set aside anyway: a bound against a crash loop if a fault ever killed the process before its
    /// mark was written (a stack overflow), high enough that a store killed again and again while busy (a
    /// watchdog, the OOM killer) does not set a request aside.
    static let killsBeforeSetAside = 16

    /// How many requests one transaction takes at most.
    static let batchSize = 512
    /// How many applied requests the log keeps at most before they are trimmed from it.
    let trimEvery: Int

    private struct Progress {
        /// The last request applied (or set aside).
        var lastApplied: Int64
        /// Requests up to this one are applied one at a time (see ``Attempt``).
        var suspectsThrough: Int64
        /// A suspect that killed the store while applied alone: set aside when its turn comes, and why.
        var fatal: (seq: Int64, faulted: Bool)?
        /// A suspect during which the store was killed (not by a fault) while applied alone, and how many times.
        var killedAlone: (seq: Int64, times: Int)?
        /// Whether requests are read from the log (at start-up, or after memory spilled) rather than memory.
        var readingLog = true
        /// The last request trimmed from the log.
        var trimmedThrough: Int64
    }

    private let progress: Mutex<Progress>
    /// The last request applied (or set aside): with the last one journaled, how far the store is behind.
    package var appliedThrough: Int64 { progress.withLock { $0.lastApplied } }
    /// How fast each customer's requests are applied (``CustomerRateLimiter``): checked before a request is decoded,
    /// so a refusal costs no more than a lookup.
    let rateLimiter: Mutex<CustomerRateLimiter>
    /// How long a watch lasts when its subscribe names no `expiresAt` (`nil`: forever); see RequestProcessor+Expiry.swift.
    let watchLifetime: TimeInterval?
    /// The store's clock time from which a watch may have expired: nothing is looked up before it.
    let expiryCheck = Mutex<Date>(.distantPast)
    /// The lines any client can cause at will, at most once a minute each.
    private let invalidCustomerLog = LogThrottle(), unexpectedTopicLog = LogThrottle()
    /// A batch applied to the store whose commit failed with an error that may pass, and the last request in it.
    private let pendingCommit = Mutex<(changes: StoreChanges, last: Int64)?>(nil)

    /// Picks up where the last process left the log: after the last request applied, with the requests of
    /// a batch it died applying as suspects.
    package init(
        store: Store, topics: RestockTopics, storage: any StoreStorage, requests: HandOff<JournaledRequest>,
        committed: HandOff<CommittedPublication>, logger: Logger, clock: @escaping @Sendable () -> Date, trimEvery: Int = 2_048,
        rateLimit: CustomerRateLimiter.Configuration = .off, metrics: StoreMetrics = StoreMetrics(), watchLifetime: TimeInterval? = nil,
        fence: DeliveryFence? = nil, view: StoreView? = nil, storageWait: StorageWait = StorageWait(stage: "applying requests", logger: nil)
    ) throws {
        self.view = view
        self.storageWait = storageWait
        self.fence = fence
        self.metrics = metrics
        self.watchLifetime = watchLifetime
        self.trimEvery = trimEvery
        self.rateLimiter = Mutex(CustomerRateLimiter(rateLimit))
        self.store = store
        self.topics = topics
        self.storage = storage
        self.requests = requests
        self.committed = committed
        self.logger = logger
        self.clock = clock
        let processed = try storage.processedThrough()
        var progress = Progress(lastApplied: processed, suspectsThrough: 0, trimmedThrough: 0)
        if let (attempt, faulted, kills) = try storage.lastAttempt(), attempt.last > processed {
            if attempt.isSuspectAlone {
                // Applied alone, it died again: of a fault, the request is the cause; killed (SIGKILL, the OOM
                // killer), it was not, and it is tried alone once more — up to a bound, in case a fault ever
                // kills the process before its mark is written.
                if faulted || kills + 1 >= Self.killsBeforeSetAside {
                    progress.fatal = (attempt.first, faulted)
                } else {
                    progress.killedAlone = (attempt.first, kills + 1)
                }
                progress.suspectsThrough = attempt.suspectsThrough
            } else {
                progress.suspectsThrough = attempt.last
            }
            logger.warning(
                "the store stopped while applying requests; applying them one at a time",
                metadata: [StoreLoggingKeys.from: "\(processed + 1)", StoreLoggingKeys.through: "\(progress.suspectsThrough)"])
        }
        self.progress = Mutex(progress)
    }

    /// Applies every request waiting, in order; returns how many there were.
    ///
    /// Crash containment: before a batch is applied its range is recorded (``StoreDatabase/beginAttempt(_:)``),
    /// so a batch that was being applied when the process died is known at the next start. Its requests are
    /// then retried one at a time; one that kills the store again goes to the dead-letter table and its sender
    /// is told (`request-failed`), and the store carries on with the rest.
    @discardableResult
    package func drainInbox() throws -> Int {
        do {
            return try applyWaiting()
        } catch let error as StorageError where error.isRetriable {
            // Requests taken from memory and not applied are read again from the log, after the last one applied.
            progress.withLock { $0.readingLog = true }
            throw error
        }
    }

    private func applyWaiting() throws -> Int {
        var total = 0
        if let pending = pendingCommit.withLock({ $0 }) {
            try storageWait.during { try commit(try again(pending.changes, through: pending.last), through: pending.last) }
        }
        try storageWait.during { try expireDueWatches() }
        while !Task.isCancelled {
            let waiting = try storageWait.during { try nextRequests() }
            if waiting.isEmpty { break }
            var rest = waiting[...]
            while let first = rest.first, !Task.isCancelled {
                let (lastApplied, suspects, fatal) = progress.withLock { ($0.lastApplied, $0.suspectsThrough, $0.fatal) }
                guard first.seq > lastApplied else {
                    rest.removeFirst()
                    continue
                }
                if let fatal, first.seq == fatal.seq {
                    try storageWait.during { try deadLetter(first, faulted: fatal.faulted) }
                    rest.removeFirst()
                    total += 1
                    continue
                }
                let batch = first.seq <= suspects ? rest.prefix(1) : rest.prefix { $0.seq > suspects }
                rest.removeFirst(batch.count)
                try storageWait.during { try apply(batch, suspectsThrough: suspects) }
                total += batch.count
            }
        }
        return total
    }

    /// The next requests to apply: from the log while catching up, otherwise from memory.
    private func nextRequests() throws -> [JournaledRequest] {
        while true {
            let (readingLog, lastApplied) = progress.withLock { ($0.readingLog, $0.lastApplied) }
            if readingLog {
                let logged = try storage.journaledRequests(after: lastApplied, limit: Self.batchSize)
                if !logged.isEmpty { return logged }
                progress.withLock { $0.readingLog = false }
            }
            switch requests.take(upTo: Self.batchSize) {
            case .spilled:
                progress.withLock { $0.readingLog = true }
            case .items(let items):
                return items
            }
        }
    }

    /// Applies one batch and commits it; its messages go on to the publisher.
    private func apply(_ batch: ArraySlice<JournaledRequest>, suspectsThrough: Int64) throws {
        guard let first = batch.first, let last = batch.last else { return }
        if first.seq <= suspectsThrough {
            // One line per request at debug level: a recovery after a kill retries up to a batch of them, and each is
            // routine (the warning at start-up says it happens).
            logger.debug("retrying a request on its own", metadata: [StoreLoggingKeys.topic: "\(first.topic)", StoreLoggingKeys.seq: "\(first.seq)"])
        }
        let kills = progress.withLock { $0.killedAlone?.seq == first.seq ? $0.killedAlone?.times ?? 0 : 0 }
        var changes = StoreChanges()
        var mirrorsToRefresh = Set<CustomerID>()
        // Watches past their time end before any request of the batch can alert them (read before the attempt begins:
        // a read that fails is no request's fault).
        try expireDue(into: &changes, refreshing: &mirrorsToRefresh)
        try storage.beginAttempt(Attempt(first: first.seq, last: last.seq, suspectsThrough: suspectsThrough), kills: kills)
        var tally = BatchTally()
        let started = ContinuousClock.now
        for request in batch { apply(request, to: &changes, refreshing: &mirrorsToRefresh, tally: &tally) }
        appendMirrors(of: mirrorsToRefresh, to: &changes)
        changes.counters = store.counters
        changes.appliedAt = clock()
        changes.processedThrough = last.seq
        metrics.applyDuration.record(duration: .now - started)
        metrics.record(tally)
        try commit(changes, through: last.seq)
    }

    /// A batch's commit to try again. The try before may have committed all the same — on PostgreSQL its answer can be
    /// lost with the connection after the server committed it — and then the state holds the batch already: made again,
    /// each of its writes changes nothing (a watch saved, a row removed, the outbox's messages put in place of
    /// themselves, by key) but the alert figures, which add, and are left out (found by an outside trial: the report
    /// counted such a batch's alerts twice).
    private func again(_ changes: StoreChanges, through last: Int64) throws -> StoreChanges {
        guard !changes.alertsRaised.isEmpty, changes.processedThrough == last, try storage.processedThrough() >= last else { return changes }
        var again = changes
        again.alertsRaised = [:]
        return again
    }

    /// Commits what a batch changed and passes its messages on to the publisher. A commit that fails with an error
    /// that may pass (a full disk) is kept and tried again first by the next ``drainInbox()``: the store holds these
    /// changes already. Any other error marks the attempt failed (its requests become suspects at the next start).
    func commit(_ changes: StoreChanges, through last: Int64) throws {
        var changes = changes
        // The log forgets requests only once their effects are on the disk: the commit after which it is trimmed is
        // made durable (one sync of the state every ``trimEvery`` requests, none on the path of the others).
        changes.durable = last - progress.withLock { $0.trimmedThrough } >= trimEvery
        let messages: [CommittedPublication]
        do {
            let started = ContinuousClock.now
            messages = try storage.commit(changes)
            metrics.commitDuration.record(duration: .now - started)
        } catch let error as StorageError where error.isRetriable {
            storage.endAttempt()  // not the requests' fault
            pendingCommit.withLock { $0 = (changes, last) }
            throw error
        } catch let error as StorageError where !error.refusesTheData {
            // A permission revoked, a function or table missing, a damaged file: the storage's trouble, not the
            // requests'. Counted against them, a supervisor's restarts set an acknowledged request aside (found by an
            // outside trial); the store stops, and at its next start the batch is retried.
            storage.endAttempt()
            throw error
        } catch {
            storage.failAttempt()
            throw error
        }
        pendingCommit.withLock { $0 = nil }
        storage.endAttempt()
        progress.withLock { $0.lastApplied = last }
        view?.deliverCommitted(changes.alerts)
        if !changes.forgotten.isEmpty { eraseForgotten(through: last) }
        if FaultInjection.crashAfterCommit, changes.publications.contains(where: \.isAlert) {
            FaultInjection.crash("crash-after-commit: alerts committed, none published")
        }
        // Alerts made ready here, on the thread that has just committed them, while the fence waits for the broker's answer.
        pass(messages.map { $0.readied(topics: topics) }, through: last)
        if changes.durable { trimLog(through: last) }
    }

    /// Passes committed messages on to the publisher: through the fence, which holds them while `last` (the last
    /// request applied when they were committed) is not confirmed delivered to this store.
    func pass(_ messages: [CommittedPublication], through last: Int64) {
        if let fence { fence.pass(messages, through: last) } else { committed.append(messages) }
    }

    /// Forgets the requests through `applied` from the log, once a durable commit holds their effects: every
    /// ``trimEvery`` requests, one transaction on the log for many requests, and none on the path of a single one.
    /// (What the log keeps beyond that is known to be applied: the store's state records how far it is.)
    private func trimLog(through applied: Int64) {
        do {
            try storage.trimJournal(through: applied)
            progress.withLock { $0.trimmedThrough = applied }
        } catch {
            // Trimming only frees room: a log that cannot be written now is trimmed at a later request.
            logger.debug("cannot trim the request log now", metadata: [StoreLoggingKeys.error: "\(error)"])
        }
    }

    /// Sets aside a request that made the store fail twice (`faulted`), or during which the store was killed
    /// ``killsBeforeSetAside`` times, and tells its sender.
    private func deadLetter(_ request: JournaledRequest, faulted: Bool) throws {
        let what =
            faulted
            ? "the store failed while applying this request, twice"
            : "the store stopped \(Self.killsBeforeSetAside) times while applying this request alone, with no fault recorded"
        logger.error(
            "\(what); it is set aside in the dead-letter table, not applied", metadata: [StoreLoggingKeys.topic: "\(request.topic)", StoreLoggingKeys.seq: "\(request.seq)"])
        let refusal = RequestRefusal(code: .requestFailed, detail: "\(what); it was set aside and not applied (request \(request.seq))")
        let now = clock()
        let report = ErrorReport(refusal: refusal, topic: request.topic, at: now)
        // With no valid customer to answer, the admin's errors topic hears of it.
        let topic = errorsTopic(for: request.topic) ?? topics.adminErrors
        let error = try storage.deadLetter(
            request, error: Publication(key: "error:\(request.seq):request-failed", topic: topic, payload: report.payloadBytes(), retain: false),
            reason: what, at: now)
        progress.withLock { $0.lastApplied = request.seq }
        metrics.deadLetters.increment()
        pass([error], through: request.seq)
    }

    /// Says `what` of `request` at warning level, at most once a minute, with how many were left unsaid since.
    private func warn(_ what: String, _ request: JournaledRequest, throttledBy throttle: LogThrottle) {
        let (say, heldBack) = throttle.admit()
        guard say else { return }
        let since = heldBack > 0 ? " (and \(heldBack) more since the last such line; said at most once a minute)" : " (said at most once a minute)"
        logger.warning("\(what)\(since)", metadata: [StoreLoggingKeys.topic: "\(request.topic)"])
    }

    /// Where refusals of a request on `topic` are answered: the customer's errors topic, the admin's, or
    /// nowhere when the customer id in the topic is not valid.
    private func errorsTopic(for topic: String) -> String? {
        switch topics.request(for: topic) {
        case .subscribe(let raw), .unsubscribe(let raw): (try? CustomerID(raw)).map(topics.errors)
        case .stock, .forget, .deadLetter: topics.adminErrors
        case nil: nil
        }
    }

    func apply(
        _ request: JournaledRequest, to changes: inout StoreChanges, refreshing mirrors: inout Set<CustomerID>, tally: inout BatchTally
    ) {
        FaultInjection.trapIfChosen(request.payload)
        guard let kind = topics.request(for: request.topic) else {
            warn("ignoring a message on an unexpected topic", request, throttledBy: unexpectedTopicLog)
            return
        }
        let customer: CustomerID?
        switch kind {
        case .subscribe(let raw), .unsubscribe(let raw):
            guard let id = try? CustomerID(raw) else {
                // No valid customer to answer: log only (docs/contract.md, "Topics").
                warn("refused a request with an invalid customer id", request, throttledBy: invalidCustomerLog)
                tally.refused[.invalidCustomer, default: 0] += 1
                return
            }
            customer = id
            // A customer past the rate limit: not decoded, not applied, no mirror; answered at most once a second.
            guard admit(id, request, into: &changes) else {
                tally.refused[.rateLimited, default: 0] += 1
                return
            }
        case .stock, .forget, .deadLetter:
            customer = nil
        }
        do {
            switch try Self.decode(request, as: kind, from: customer) {
            case .subscribe(let who, let sku, let mode, let minQuantity, let expiresAt):
                try subscribe(
                    who, to: sku, mode: mode, minQuantity: minQuantity, expiresAt: expiresAt, request, into: &changes, tally: &tally)
                mirrors.insert(who)
            case .unsubscribe(let who, let sku):
                let removed = store.unsubscribe(who, from: sku)
                if removed != nil { changes.remove(WatchKey(customer: who, sku: sku)) }
                tally.applied[.unsubscribe, default: 0] += 1
                mirrors.insert(who)
                logAccepted(request, "unsubscribe", who, sku: sku, position: removed?.position)
            case .unsubscribeAll(let who):
                for watch in store.unsubscribeAll(who) { changes.remove(WatchKey(customer: who, sku: watch.sku)) }
                tally.applied[.unsubscribeAll, default: 0] += 1
                mirrors.insert(who)
                logAccepted(request, "unsubscribe-all", who, sku: nil, position: nil)
            case .stock(let sku, let change):
                try applyStock(sku, change, to: &changes, refreshing: &mirrors, tally: &tally)
            case .forget(let who):
                forget(who, request, into: &changes, refreshing: &mirrors)
                tally.applied[.forget, default: 0] += 1
            case .deadLetter(let action):
                handle(action, request, into: &changes, refreshing: &mirrors, tally: &tally)
                tally.applied[.deadLetter, default: 0] += 1
            }
        } catch {
            let refusal = error
            tally.refused[refusal.code, default: 0] += 1
            logger.notice("refused a request", metadata: [StoreLoggingKeys.topic: "\(request.topic)", StoreLoggingKeys.error: "\(refusal)"])
            let report = ErrorReport(refusal: refusal, topic: request.topic, at: clock())
            let topic = customer.map(topics.errors) ?? topics.adminErrors
            changes.publications.append(
                Publication(key: "error:\(request.seq):\(UUID().uuidString)", topic: topic, payload: report.payloadBytes(), retain: false))
        }
    }

    /// The request `request` of `kind`, from `customer` (for a customer's request), decoded — or why it is refused.
    private static func decode(
        _ request: JournaledRequest, as kind: RestockTopics.Request, from customer: CustomerID?
    ) throws(RequestRefusal) -> StoreRequest {
        guard !request.retained else { throw RequestDecoder.retainedRequest }
        guard request.size <= RequestDecoder.maximumPayloadSize else { throw RequestDecoder.tooLarge(request.size) }
        switch (kind, customer) {
        case (.subscribe, let id?): return try RequestDecoder.subscribe(id, payload: request.payload)
        case (.unsubscribe, let id?): return try RequestDecoder.unsubscribe(id, payload: request.payload)
        case (.forget, _): return try RequestDecoder.forget(payload: request.payload)
        case (.deadLetter, _): return try RequestDecoder.deadLetter(payload: request.payload)
        default: return try RequestDecoder.stock(payload: request.payload)
        }
    }

    /// Applies a subscribe: the watch saved (or removed, when its terms end it), and its alert when the SKU is in stock.
    private func subscribe(
        _ who: CustomerID, to sku: SKU, mode: WatchMode, minQuantity: Int, expiresAt: Date?, _ request: JournaledRequest,
        into changes: inout StoreChanges, tally: inout BatchTally
    ) throws(RequestRefusal) {
        let expiresAt = try expiry(of: expiresAt)
        let outcome = try perform { () throws(RestockError) in
            try store.subscribe(who, to: sku, mode: mode, minQuantity: minQuantity, expiresAt: expiresAt)
        }
        if outcome.isKept, let expiresAt { expiryCheck.withLock { $0 = min($0, expiresAt) } }
        if outcome.isChanged {
            if outcome.isKept { changes.save(outcome.watch) } else { changes.remove(WatchKey(customer: who, sku: sku)) }
        }
        if let alert = outcome.alert {
            changes.publications.append(publication(of: alert))
            changes.alerts.append(alert)
            changes.alertsRaised[sku, default: 0] += 1
        }
        tally.alerts += outcome.alert == nil ? 0 : 1
        tally.applied[.subscribe, default: 0] += 1
        logAccepted(request, "subscribe", who, sku: sku, position: outcome.watch.position)
    }
}
