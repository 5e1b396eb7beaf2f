import Deadlines
import DequeModule
import Logging
import Metrics
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle
import Synchronization

/// The publishing stage of the store's pipeline: publishes what the applying stage committed, in commit order —
/// taken from memory as it is committed, or read from the outbox at start-up and after a lost connection — and
/// forgets each message once the broker has acknowledged it. A batch of alerts is expanded here, alert by
/// alert, and its progress recorded as its rounds are acknowledged. After a crash, or a lost connection,
/// whatever was not acknowledged goes out again with the same payload (and the same alert id).
struct OutboxPublisher: Service {
    /// The store's publishing connection.
    let client: any BrokerConnection
    let storage: any StoreStorage
    /// What the applying stage committed, in memory.
    let committed: HandOff<CommittedPublication>
    /// How far the outbox may be read from the file: later messages are held until their requests are confirmed.
    let fence: DeliveryFence
    /// Woken when the outbox has grown (and by this stage itself when it begins to stop).
    let wakeups: AsyncStream<Void>
    let wake: AsyncStream<Void>.Continuation
    let topics: RestockTopics
    let logger: Logger
    /// How long a graceful shutdown keeps publishing what the outbox holds.
    let drainTimeout: Duration
    /// Whether the store was taken over: then it stops at once, without draining.
    let lifecycle: StoreLifecycle
    /// How long a stopping store waits, after its drain, for the acknowledgements of what it has sent.
    let acknowledgementGrace: Duration
    /// Alerts published and acknowledged, and how long the broker takes to acknowledge a round.
    let metrics: StoreMetrics
    /// The MQTT 5 message expiry interval of alerts, in seconds (`nil`: none; docs/contract.md, "Alert expiry").
    let alertExpiry: UInt32?
    /// How long a read of the outbox that failed for a reason that may pass waits before it is tried again.
    let retryInterval: Duration
    /// The clock ``retryInterval`` is measured by (``StoreTiming/clock``).
    let clock: ServiceClock
    /// Acknowledgements the database could not record yet (a full disk), recorded with the next ones.
    private let unrecorded = UnrecordedAcknowledgements()
    /// Reads of the outbox that failed, for their log lines.
    private let readFailures = RepeatedFailures()
    private let stopping = ShutdownDeadline()

    /// How many messages are read and kept in flight at once.
    static let round = 1_000
    /// How many the first round of a drain reads: its first message leaves once the round is read (a round of alerts
    /// is expanded and written out first: 2.5-4 ms for 1,000 on this project's machine), and the next, full, round
    /// follows at once. The applying stage makes the first alerts of each batch ready after its commit
    /// (``RestockPipeline/CommittedPublication/readiedAlerts``).
    static let firstRound = 64

    init(
        client: any BrokerConnection, storage: any StoreStorage, committed: HandOff<CommittedPublication>, fence: DeliveryFence,
        wakeups: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation), topics: RestockTopics,
        logger: Logger, drainTimeout: Duration, lifecycle: StoreLifecycle, acknowledgementGrace: Duration, metrics: StoreMetrics,
        alertExpiry: UInt32? = nil, retryInterval: Duration, clock: ServiceClock
    ) {
        self.retryInterval = retryInterval
        self.clock = clock
        self.alertExpiry = alertExpiry
        self.metrics = metrics
        self.lifecycle = lifecycle
        self.acknowledgementGrace = acknowledgementGrace
        self.client = client
        self.storage = storage
        self.committed = committed
        self.fence = fence
        (self.wakeups, self.wake) = wakeups
        self.topics = topics
        self.logger = logger
        self.drainTimeout = drainTimeout
    }

    /// Publishes whenever the outbox grows, on the pipeline's thread (``PipelineExecutor``), where it reads and
    /// writes the database. On graceful shutdown — which comes after the applying stage has stopped, so the outbox
    /// holds all there is — it publishes what is left for up to ``drainTimeout``, records what the broker
    /// acknowledged, says how much is left for the next start, and ends. Cancelled, it ends at once, recording the
    /// acknowledgements it has.
    func run() async throws {
        let executor = storage.executor
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask(executorPreference: executor) {
                    // What the outbox held before this start is read from it first; so is everything after a lost connection.
                    let reader = OutboxReader(storage: storage, committed: committed, fence: fence, topics: topics, logger: logger)
                    for await _ in wakeups {
                        try await drain(reader)
                        guard stopping.isStopping else { continue }
                        // The applying stage has ended: drain until a pass finds nothing more (a pass that waited long for
                        // acknowledgements may have ended on what was pending before the last commits), or the time is up.
                        while try await drain(reader) > 0 {}
                        return
                    }
                }
                group.addTask {
                    // The drain is bounded, also when acknowledgements never come (the broker is gone).
                    guard await stopping.begun() else { return }
                    try await Task.sleep(for: drainTimeout + acknowledgementGrace)
                    throw CancellationError()
                }
                defer { group.cancelAll() }
                do {
                    try await group.next()
                } catch is CancellationError {}
            }
        } onGracefulShutdown: {
            stopping.begin(drainingFor: lifecycle.takenOverBy == nil ? drainTimeout : .zero)
            wake.yield()
        }
        guard stopping.isStopping else { return }
        // Fenced: what is left belongs to the newer owner, which sends it (an outside trial read "the outbox is empty"
        // from a store that had sent nothing of it).
        if lifecycle.leaseLost != nil {
            logger.notice("stopping without sending the outbox: a newer owner holds the lease, and sends what is left")
            return
        }
        let left = (try? storage.queueLengths().outbox) ?? -1
        if left > 0 {
            logger.notice("stopping with \(left) messages (alerts, mirrors, inventory) left in the outbox; the next start sends them")
        } else {
            logger.info("the outbox is empty: every message was acknowledged by the broker")
        }
    }

    /// One message on its way, and where in the outbox it comes from.
    fileprivate struct Outgoing {
        let seq: Int64
        /// Its place in a batch of alerts, or `nil` for a message of its own.
        let index: Int?
        let topic: String
        let payload: [UInt8]
        let retain: Bool
        /// Whether it is an alert (of a batch, or on its own on a customer's alerts topic).
        var isAlert: Bool { index != nil || topic.hasSuffix("/alerts") }
    }

    /// Publishes everything pending; returns how many messages it sent. Each round is queued before the previous
    /// round's acknowledgements are awaited and recorded, so the connection stays busy while the database is written.
    /// Once the shutdown deadline has passed it sends nothing more, and records the acknowledgements of what it sent.
    @discardableResult
    private func drain(_ reader: OutboxReader) async throws -> Int {
        var total = 0
        var roundSize = Self.firstRound
        while !Task.isCancelled, !stopping.hasPassed {
            var awaiting: [(Outgoing, BrokerAcknowledgement)] = []
            var sentAt = ContinuousClock.now
            do {
                while !Task.isCancelled {
                    if stopping.hasPassed {
                        let (last, since) = (awaiting, sentAt)
                        _ = try? await withDeadline(acknowledgementGrace.seconds) { try await acknowledge(last, sentAt: since) }
                        return total
                    }
                    try await waitForTheSession()
                    try checkLease()
                    // On the pipeline's thread (``PipelineExecutor``), where the database is read and written.
                    let round = try lifecycle.publishWait.during { try reader.next(roundSize) }
                    if let since = readFailures.succeeded(at: clock.now) {
                        logger.notice("read the outbox again, after \(Int((clock.now - since).seconds)) s: publishing goes on")
                    }
                    roundSize = Self.round
                    let now = ContinuousClock.now
                    // Queued one after another, so they leave in order; acknowledged in any order.
                    let sent = try round.map { message in
                        (
                            message,
                            try client.send(
                                message.payload, to: message.topic, retain: message.retain,
                                properties: MQTTMessageProperties(messageExpiryInterval: message.isAlert ? alertExpiry : nil))
                        )
                    }
                    total += sent.count
                    metrics.alertsPublished.increment(by: round.count(where: \.isAlert))
                    try await acknowledge(awaiting, sentAt: sentAt)
                    (awaiting, sentAt) = (sent, now)
                    if round.isEmpty { return total }
                }
            } catch MQTTError.notConnected {
                // Reconnecting: start over from the oldest unacknowledged message once back.
                logger.notice("broker connection lost while publishing; will resend after reconnecting")
                reader.startOver()
                try await waitUntilConnected()
            } catch let error as StorageError where error.isRetriable {
                try await retryAfterAFailedRead(error, reader: reader, acknowledging: awaiting, sentAt: sentAt)
            }
        }
        return total
    }

    /// The outbox could not be read now — the database is restarting or out of reach, a lock was held past the lock
    /// timeout — which may pass, as it does for the applying stage's commits: the read is tried again every
    /// ``retryInterval``, logged once when it begins and once a minute. It stopped the store before (found by CI: a
    /// store whose database stopped as it came online read its outbox then, and exited). What was sent is acknowledged
    /// as far as the broker answers, and the reading starts over from the oldest message not acknowledged.
    private func retryAfterAFailedRead(
        _ error: StorageError, reader: OutboxReader, acknowledging awaiting: [(Outgoing, BrokerAcknowledgement)], sentAt: ContinuousClock.Instant
    ) async throws {
        _ = try? await withDeadline(acknowledgementGrace.seconds) { try await acknowledge(awaiting, sentAt: sentAt) }
        reader.startOver()
        if readFailures.failed(at: clock.now, reportEvery: .seconds(60)) {
            logger.warning(
                "cannot read the outbox now; publishing waits and tries again every \(retryInterval.seconds) s (said again once a minute)",
                metadata: [StoreLoggingKeys.error: "\(error)"])
        }
        try await clock.sleep(for: retryInterval)
    }

    /// Waits for each acknowledgement, then records them in one transaction: messages are forgotten, and each
    /// batch remembers how far it has been acknowledged (every earlier round was acknowledged before). What the
    /// database cannot record now (a full disk) is kept and recorded with the next ones; until then a restart
    /// would send those messages again, with the same ids.
    private func acknowledge(_ publications: [(Outgoing, BrokerAcknowledgement)], sentAt: ContinuousClock.Instant) async throws {
        guard !publications.isEmpty else { return }
        var (messages, batches) = unrecorded.take()
        var interrupted: (any Error)?
        var alerts = 0
        defer {
            metrics.alertsAcknowledged.increment(by: alerts)
            if interrupted == nil { metrics.acknowledgementDuration.record(duration: .now - sentAt) }
        }
        for (message, publication) in publications {
            do {
                try await publication.acknowledged()
            } catch MQTTError.publishRefused(let topic, let code, let reason) {
                // Retrying cannot help; keep it from blocking the rest.
                logger.error("the broker refused a publish; dropping it", metadata: [StoreLoggingKeys.topic: "\(topic)", StoreLoggingKeys.reason: "\(code) \(reason)"])
            } catch {
                // Stopped or disconnected: record what was acknowledged before it, so none of that is sent again.
                interrupted = error
                break
            }
            if message.isAlert { alerts += 1 }
            if let index = message.index {
                if batches.last?.seq == message.seq {
                    batches[batches.count - 1].sent = max(batches[batches.count - 1].sent, index + 1)
                } else {
                    batches.append((message.seq, index + 1))
                }
            } else {
                messages.append(message.seq)
            }
        }
        do {
            try lifecycle.publishWait.during { try storage.acknowledge(messages: messages, batches: batches) }
        } catch let error as StorageError where error.isRetriable {
            logger.debug("cannot record acknowledgements now; keeping them", metadata: [StoreLoggingKeys.error: "\(error)"])
            unrecorded.keep(messages: messages, batches: batches)
        }
        if let interrupted { throw interrupted }
    }

    /// Returns once the store's session is up again, or paused by the store itself, or the store stops (a graceful
    /// drain goes on); while it is lost and not decided (``StoreLifecycle/holdsPublications``), nothing more is sent.
    /// Throws when a newer instance took the store over: it stops at once.
    /// Woken by the lifecycle's change (the session watch decides within a liveness window) or by the stop, never by a
    /// clock.
    private func waitForTheSession() async throws {
        while true {
            let change = lifecycle.nextChange(), stop = stopping.beginning
            guard lifecycle.holdsPublications, !stopping.isStopping else { break }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { _ = await change.wait() }
                group.addTask { _ = await stop.wait() }
                await group.next()
                group.cancelAll()
            }
            try Task.checkCancellation()
        }
        if lifecycle.takenOverBy != nil { throw CancellationError() }
    }

    /// Before each round: throws when a newer owner holds the data directory's lease (this process was frozen or
    /// stalled past its lifetime), which stops the store at once, as a takeover does. A lease that cannot be read now
    /// (a lock, a full disk) does not hold the round up: the lease's renewal decides.
    private func checkLease() throws {
        guard lifecycle.publishWait.during({ lifecycle.stillHolds(storage.ownership) }) else { throw CancellationError() }
    }

    private func waitUntilConnected() async throws {
        let events = client.connectionEvents()
        guard !client.isConnected else { return }
        for await event in events {
            if case .connected = event { return }
            if case .disconnected = event { break }
        }
        throw CancellationError()  // the client was closed: the store is stopping
    }

    /// Takes the outbox in order, a round at a time, expanding batches of alerts into their messages: from
    /// memory as the applying stage commits, from the database while catching up (at start-up, after a lost
    /// connection, or when memory spilled). Used on the pipeline's thread (``PipelineExecutor``).
    private final class OutboxReader: Sendable {
        let storage: any StoreStorage
        let committed: HandOff<CommittedPublication>
        let fence: DeliveryFence
        let topics: RestockTopics
        let logger: Logger

        /// One committed message or batch, how many of its alerts are already acknowledged, and its first alerts made
        /// ready to send (``CommittedPublication/firstAlerts``).
        private struct Entry {
            let seq: Int64
            let publication: Publication
            let sent: Int
            var firstAlerts: [AlertMessage] = []
        }

        private struct Position {
            /// The last entry taken.
            var seq: Int64 = 0
            /// The batch being taken, with the index of its next alert and its first alerts made ready.
            var batch: (seq: Int64, alerts: AlertBatch, next: Int, ready: [AlertMessage])?
            /// Entries taken, not yet expanded.
            var entries: Deque<Entry> = []
            /// Whether entries are read from the database rather than taken from memory.
            var readingDatabase = true
        }

        private let position = Mutex(Position())

        init(storage: any StoreStorage, committed: HandOff<CommittedPublication>, fence: DeliveryFence, topics: RestockTopics, logger: Logger) {
            self.storage = storage
            self.committed = committed
            self.fence = fence
            self.topics = topics
            self.logger = logger
        }

        /// Starts again from the oldest message not acknowledged, read from the database (after a lost connection).
        func startOver() { position.withLock { $0 = Position() } }

        /// Up to `limit` messages, following the last ones returned.
        func next(_ limit: Int) throws -> [Outgoing] {
            try position.withLock { position in try next(limit, from: &position) }
        }

        private func next(_ limit: Int, from position: inout Position) throws -> [Outgoing] {
            var round: [Outgoing] = []
            while round.count < limit {
                if let current = position.batch, current.next < current.alerts.count {
                    let end = min(current.alerts.count, current.next + limit - round.count)
                    for index in current.next..<end {
                        let message = index < current.ready.count ? current.ready[index] : current.alerts.message(index, topics: topics)
                        round.append(Outgoing(seq: current.seq, index: index, topic: message.topic, payload: message.payload, retain: false))
                    }
                    position.batch?.next = end
                    continue
                }
                if let entry = position.entries.popFirst() {
                    // Taken from memory after it was read from the database: sent already.
                    guard entry.seq > position.seq else { continue }
                    position.seq = entry.seq
                    let publication = entry.publication
                    guard publication.alertCount > 0 else {
                        round.append(Outgoing(seq: entry.seq, index: nil, topic: publication.topic, payload: publication.payload, retain: publication.retain))
                        continue
                    }
                    guard let alerts = publication.alerts ?? AlertBatch(decoding: publication.payload), alerts.count == publication.alertCount
                    else {
                        // Not written by this store: nothing to send, and it must not block the rest.
                        logger.error("dropping an unreadable batch of alerts from the outbox", metadata: [StoreLoggingKeys.seq: "\(entry.seq)"])
                        try storage.acknowledge(messages: [entry.seq], batches: [])
                        continue
                    }
                    // The alerts made ready are the batch's first, by index: one resumed from the file has none.
                    position.batch = (entry.seq, alerts, entry.sent, entry.firstAlerts)
                    continue
                }
                if position.readingDatabase {
                    // Only what the fence has let through: a held message comes from memory once released.
                    let released = fence.releasedThrough
                    let rows = try storage.pendingPublications(after: position.seq, limit: limit - round.count).prefix { $0.seq <= released }
                    guard !rows.isEmpty else {
                        position.readingDatabase = false
                        continue
                    }
                    for row in rows {
                        var publication = Publication(key: "", topic: row.topic, payload: row.payload, retain: row.retain)
                        publication.alertCount = row.alertCount
                        position.entries.append(Entry(seq: row.seq, publication: publication, sent: row.sent))
                    }
                    continue
                }
                switch committed.take(upTo: limit - round.count) {
                case .spilled:
                    position.readingDatabase = true
                case .items(let items):
                    guard !items.isEmpty else { return round }
                    for item in items {
                        position.entries.append(Entry(seq: item.seq, publication: item.publication, sent: 0, firstAlerts: item.firstAlerts))
                    }
                }
            }
            return round
        }
    }
}

/// Acknowledgements the database could not record yet, kept for the next try.
private final class UnrecordedAcknowledgements: Sendable {
    private let kept = Mutex<(messages: [Int64], batches: [(seq: Int64, sent: Int)])>(([], []))

    func keep(messages: [Int64], batches: [(seq: Int64, sent: Int)]) { kept.withLock { $0 = (messages, batches) } }

    /// What is kept, emptied.
    func take() -> (messages: [Int64], batches: [(seq: Int64, sent: Int)]) {
        kept.withLock { kept in
            defer { kept = ([], []) }
            return kept
        }
    }
}
