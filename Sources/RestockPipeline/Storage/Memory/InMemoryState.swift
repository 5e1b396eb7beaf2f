import Foundation
import RestockCore

/// A store's durable state kept in memory: what the SQLite backend keeps in `store.sqlite`, `journal.sqlite` and the
/// `attempt` file (docs/operations.md, "What the store has on disk"), as plain values, with the same rules — the SQLite
/// types named on each member are the specification. Each mutating method is one of SQLite's transactions: all of it
/// happens, or (it throws) none. ``InMemoryVolume`` keeps it under a lock; ``InMemoryStorage`` checks the lease first.
struct InMemoryState: Sendable {
    /// A message, or a batch of alerts, waiting in the outbox for the broker's acknowledgement (``OutboxRecord``).
    struct OutboxEntry: Sendable {
        /// What makes it unique (``Publication/key``): a newer message with the same key replaces it.
        let key: String
        /// The topic to publish on (empty for a batch).
        let topic: String
        /// The payload, or the encoded ``AlertBatch``.
        let payload: [UInt8]
        /// Whether it is published with the retain flag.
        let retain: Bool
        /// How many alerts the batch holds; 0 for a single message.
        let batch: Int
        /// How many of the batch's alerts, from the first, are acknowledged.
        var sent: Int
        /// The SKU of the alerts it carries; `nil` for any other message.
        let sku: String?

        /// The message as the publisher sends it, at `place`.
        func pending(at place: Int64) -> PendingPublication {
            PendingPublication(seq: place, topic: topic, payload: payload, retain: retain, alertCount: batch, sent: sent)
        }
    }

    /// A request set aside, with why and when (``DeadLetterRecord``).
    struct DeadLetter: Sendable {
        /// The request as journaled.
        let request: JournaledRequest
        /// Why, in one sentence.
        let reason: String
        /// When, in seconds since 1970 (as SQLite keeps it, so that both list it alike).
        let failedAt: Double
    }

    /// How many alerts of one SKU were raised and acknowledged in one hour (a row of ``AlertFigures``).
    struct Figure: Sendable {
        /// Alerts raised.
        var raised = 0
        /// Alerts the broker acknowledged.
        var acknowledged = 0
    }

    // MARK: Identity

    /// The store the state belongs to: the first to open it claims it.
    var store: StoreID?
    /// The store process that used it last (``StoreStorage/replaceInstance(with:)``).
    var instance: String?
    /// Whether it is a restored copy the broker has not been made to agree with yet (``StoreStorage/isRestored``).
    var restored = false
    /// The requests being applied, whether a fault ended the process meanwhile, and earlier deaths (``AttemptRecord``).
    var attempt: (attempt: Attempt, faulted: Bool, kills: Int)?

    // MARK: The state

    /// Every watch, by customer and SKU.
    private(set) var watches: [WatchKey: Watch] = [:]
    /// Which watch holds each position: positions are unique, as SQLite's `watch.position` is.
    private var positions: [UInt64: WatchKey] = [:]
    /// The on-hand quantity of every SKU recorded, zeros included.
    private(set) var inventory: [SKU: Int] = [:]
    /// The position the next new watch takes and the sequence number the next alert takes, once recorded.
    private var counters: (nextPosition: UInt64, nextAlertSequence: UInt64)?
    /// The place of the last request applied (or set aside), once recorded.
    private var processed: Int64?
    /// The place of the last request applied (or set aside); 0 before the first.
    var processedThrough: Int64 { processed ?? 0 }
    /// Every customer the store has published a mirror for.
    private(set) var mirrors: Set<CustomerID> = []
    /// Alerts raised and acknowledged, by SKU and hour; hour 0 holds the hours older than a day.
    private var figures: [String: [Int64: Figure]] = [:]

    // MARK: The outbox, the journal, dead letters

    /// Messages committed and not yet acknowledged, by place.
    private(set) var outbox = PlaceOrdered<OutboxEntry>()
    /// The place of each waiting message, by key.
    private var outboxKeys: [String: Int64] = [:]
    /// The highest place a message was ever written at (SQLite's `sqlite_sequence`): a storage opened next places after it.
    private(set) var lastOutboxPlace: Int64 = 0
    /// The requests journaled and not yet trimmed, by place.
    private(set) var journal = PlaceOrdered<JournaledRequest>()
    /// The last place given to a request, trimmed or not: places are never given twice.
    private var lastJournalPlace: Int64 = 0
    /// The requests set aside, by place.
    private(set) var deadLetters = PlaceOrdered<DeadLetter>()

    // MARK: Opening

    /// A storage opens the state: the journal gives places after every request applied (``EarlierInbox``'s
    /// `move(to:applied:)`), whatever was recorded as processed.
    mutating func open() { lastJournalPlace = max(lastJournalPlace, processedThrough) }

    // MARK: The journal

    /// Appends `requests` in order (``RequestLog/append(batch:)``); returns them with their places.
    mutating func journal(_ requests: [(topic: String, payload: [UInt8], size: Int, retained: Bool)]) -> [JournaledRequest] {
        requests.map { request in
            lastJournalPlace += 1
            let journaled = JournaledRequest(
                seq: lastJournalPlace, topic: request.topic, payload: request.payload, size: request.size, retained: request.retained)
            journal[journaled.seq] = journaled
            return journaled
        }
    }

    /// Forgets the requests through `place` (``RequestLog/trim(through:)``).
    mutating func trimJournal(through place: Int64) { journal.removeAll(through: place) }

    // MARK: Commit

    /// Commits `changes` with `messages`, its publications at their places (``StateWriter/commit(_:messages:)``), in the
    /// same order of steps. All or nothing: it is applied to a copy, which replaces the state once every step is done.
    /// - Throws: ``InMemoryStorageFailure`` when a watch is saved at a position another watch holds.
    mutating func commit(_ changes: StoreChanges, messages: [CommittedPublication]) throws(InMemoryStorageFailure) {
        var next = self
        try next.apply(changes.watchChanges)
        next.inventory.merge(changes.inventory) { $1 }
        if let counters = changes.counters { next.counters = counters }
        for forgotten in changes.forgotten { next.forget(forgotten) }
        for place in changes.deadLettersRemoved { next.deadLetters[place] = nil }
        next.record(raised: changes.alertsRaised, at: changes.appliedAt)
        next.mirrors.formUnion(changes.mirrored)
        next.insert(messages)
        if let place = changes.processedThrough { next.processed = place }
        self = next
    }

    /// Applies watch changes in the order they were made, but each run of saves in key order, as SQLite writes it
    /// (``WatchTable/apply(_:in:)``): a run that moves one watch off a position and another onto it is refused alike
    /// (found by the differential test: memory took it, SQLite refused it on the position's `UNIQUE`).
    private mutating func apply(_ changes: [StoreChanges.WatchChange]) throws(InMemoryStorageFailure) {
        var saves: [Watch] = []
        for change in changes {
            if case .save(let watch) = change {
                saves.append(watch)
                continue
            }
            try save(inKeyOrder: saves)
            saves.removeAll()
            switch change {
            case .save: break
            case .remove(let key): remove(key)
            case .setWaiting(let waiting, let changed):
                for position in changed {
                    guard let key = positions[position], let watch = watches[key] else { continue }
                    watches[key] = Watch(
                        customer: watch.customer, sku: watch.sku, mode: watch.mode, minQuantity: watch.minQuantity,
                        position: watch.position, since: watch.since, isWaiting: waiting, expiresAt: watch.expiresAt)
                }
            case .removePositions(let removed):
                for position in removed { if let key = positions[position] { remove(key) } }
            }
        }
        try save(inKeyOrder: saves)
    }

    /// Saves a run of watches sorted by customer and SKU; the sort is stable, so a key saved twice keeps its last version.
    private mutating func save(inKeyOrder run: [Watch]) throws(InMemoryStorageFailure) {
        for watch in run.sorted(by: { ($0.customer, $0.sku) < ($1.customer, $1.sku) }) { try save(watch) }
    }

    /// Makes or changes the watch of its customer and SKU, at its position.
    private mutating func save(_ watch: Watch) throws(InMemoryStorageFailure) {
        let key = WatchKey(customer: watch.customer, sku: watch.sku)
        if let holder = positions[watch.position], holder != key { throw .positionTaken(watch.position, by: holder) }
        if let old = watches[key] { positions[old.position] = nil }
        watches[key] = watch
        positions[watch.position] = key
    }

    /// Removes the watch of `key`, if any.
    private mutating func remove(_ key: WatchKey) {
        guard let old = watches.removeValue(forKey: key) else { return }
        positions[old.position] = nil
    }

    /// Removes what is kept about a forgotten customer but their watches (``StateWriter``'s `forget`).
    private mutating func forget(_ forgotten: StoreChanges.Forgotten) {
        mirrors.remove(forgotten.customer)
        let topics = Set(forgotten.customerTopics)
        for entry in outbox.entries where topics.contains(entry.element.topic) { removeMessage(at: entry.place) }
        let requestTopics = Set(forgotten.requestTopics)
        deadLetters.removeAll { requestTopics.contains($0.request.topic) }
    }

    // MARK: The outbox

    /// Writes `messages` at their places (``Outbox/insert(_:in:)``): a message replaces the one waiting with its key,
    /// so that a retained topic keeps only its newest version waiting.
    private mutating func insert(_ messages: [CommittedPublication]) {
        for message in messages {
            let publication = message.publication
            if let older = outboxKeys[publication.key] { removeMessage(at: older) }
            removeMessage(at: message.seq)
            outbox[message.seq] = OutboxEntry(
                key: publication.key, topic: publication.topic, payload: publication.payload, retain: publication.retain,
                batch: publication.alertCount, sent: 0, sku: publication.sku)
            outboxKeys[publication.key] = message.seq
            lastOutboxPlace = max(lastOutboxPlace, message.seq)
        }
    }

    /// Forgets the message at `place`, if any.
    private mutating func removeMessage(at place: Int64) {
        guard let entry = outbox[place] else { return }
        outbox[place] = nil
        outboxKeys[entry.key] = nil
    }

    /// Records acknowledgements at `date` (``Outbox/acknowledge(messages:batches:)``): the alerts acknowledged count in
    /// the figures first, then single messages are forgotten and each batch records how many of its alerts are sent.
    mutating func acknowledge(messages places: [Int64], batches: [(seq: Int64, sent: Int)], at date: Date) {
        var acknowledged: [String: Int] = [:]
        for place in Set(places) {
            guard let entry = outbox[place], let sku = entry.sku, entry.batch == 0 else { continue }
            acknowledged[sku, default: 0] += 1
        }
        for batch in batches {
            guard let entry = outbox[batch.seq], let sku = entry.sku else { continue }
            let (newly, overflow) = batch.sent.subtractingReportingOverflow(entry.sent)
            if newly > 0, !overflow { acknowledged[sku] = ReportFigures.sum(acknowledged[sku] ?? 0, newly) }
        }
        let hour = ReportFigures.hour(of: date)
        for (sku, count) in acknowledged { figures[sku, default: [:]][hour, default: Figure()].acknowledged += count }
        for place in places { removeMessage(at: place) }
        for batch in batches {
            guard let entry = outbox[batch.seq] else { continue }
            if entry.batch > batch.sent { outbox[batch.seq]?.sent = batch.sent } else { removeMessage(at: batch.seq) }
        }
    }

    /// How many messages wait: a batch counts the alerts it still has to send (``Outbox/messageCount(_:)``).
    var messageCount: Int {
        outbox.entries.reduce(0) { count, entry in
            let message = entry.element
            let (left, overflow) = message.batch.subtractingReportingOverflow(message.sent)
            return ReportFigures.sum(count, message.batch > 0 ? (overflow ? .max : left) : 1)
        }
    }

    // MARK: Dead letters

    /// Sets `request` aside, queues `error` and records the request as processed (``DeadLetters/setAside``).
    mutating func setAside(_ request: JournaledRequest, error: CommittedPublication, reason: String, at date: Date) {
        deadLetters[request.seq] = DeadLetter(request: request, reason: reason, failedAt: date.timeIntervalSince1970)
        insert([error])
        processed = request.seq
    }

    // MARK: Figures

    /// Adds `raised` alerts per SKU to the hour of `date`, and folds the hours older than a day into hour 0
    /// (``AlertFigures/record(raised:at:in:)``).
    private mutating func record(raised: [SKU: Int], at date: Date) {
        guard !raised.isEmpty else { return }
        let hour = ReportFigures.hour(of: date)
        for (sku, count) in raised {
            figures[sku.rawValue, default: [:]][hour, default: Figure()].raised = ReportFigures.sum(
                figures[sku.rawValue]?[hour]?.raised ?? 0, count)
        }
        let first = ReportFigures.firstHourOfDay(endingIn: hour)
        for (sku, hours) in figures where hours.keys.contains(where: { $0 > 0 && $0 < first }) {
            var folded = hours.filter { $0.key == 0 || $0.key >= first }
            for (hour, figure) in hours where hour > 0 && hour < first {
                folded[0, default: Figure()].raised = ReportFigures.sum(folded[0]?.raised ?? 0, figure.raised)
                folded[0, default: Figure()].acknowledged = ReportFigures.sum(folded[0]?.acknowledged ?? 0, figure.acknowledged)
            }
            figures[sku] = folded
        }
    }

    // MARK: Reading

    /// Everything the store needs to carry on, and a description of each record left out as SQLite's reader leaves it
    /// out (``StateReader/snapshot()``): the next position is never behind a watch's, left out or not.
    func snapshot() -> (snapshot: StoreSnapshot, skipped: [String]) {
        var skipped: [String] = []
        var snapshot = StoreSnapshot()
        let ordered = watches.values.sorted { $0.position < $1.position }
        for watch in ordered {
            guard RequestLimits.minQuantity.contains(watch.minQuantity), StoredValues.isCounter(Int64(truncatingIfNeeded: watch.position)),
                watch.position <= UInt64(StoredValues.maximumCounter), StoredValues.isDate(watch.since.timeIntervalSinceReferenceDate),
                watch.expiresAt.map({ StoredValues.isDate($0.timeIntervalSinceReferenceDate) }) ?? true
            else {
                skipped.append("watch \(watch)")
                continue
            }
            snapshot.watches.append(watch)
        }
        for (sku, quantity) in inventory {
            guard RequestLimits.stockSet.contains(quantity) else {
                skipped.append("inventory \(sku), \(quantity)")
                continue
            }
            snapshot.inventory[sku] = quantity
        }
        let (position, sequence) = counters ?? (0, 0)
        if counters != nil, position == 0 { skipped.append("counter nextPosition, 0") }
        if counters != nil, sequence == 0 { skipped.append("counter nextAlertSequence, 0") }
        // SQLite keeps it among the counters, and leaves out one that is not positive as it leaves out the others.
        if let processed, processed <= 0 { skipped.append("counter processedThrough, \(processed)") }
        // Past every position held up to the bound, left out or not, as SQLite's reader (StoredValues).
        let highest = ordered.last { $0.position <= UInt64(StoredValues.maximumCounter) }?.position ?? 0
        snapshot.nextPosition = max(position == 0 ? 1 : position, highest + 1)
        snapshot.nextAlertSequence = sequence == 0 ? 1 : sequence
        return (snapshot, skipped)
    }

    /// How many requests wait after the last applied.
    var inboxLength: Int { journal.count(after: processedThrough) }

    /// The figures of each SKU with a watch or an alert (or of `sku` alone), as of `now` (``AlertFigures/report``).
    func report(at now: Date, sku: SKU?) -> StoreReport {
        let since = ReportFigures.firstHourOfDay(endingIn: ReportFigures.hour(of: now))
        var skus: [String: StoreReport.SKUFigures] = [:]
        var customers: Set<CustomerID> = []
        for watch in watches.values where sku == nil || watch.sku == sku {
            customers.insert(watch.customer)
            skus[watch.sku.rawValue, default: StoreReport.SKUFigures(sku: watch.sku.rawValue, watching: 0, waiting: 0)].watching += 1
            if watch.isWaiting { skus[watch.sku.rawValue]?.waiting += 1 }
        }
        for (name, hours) in figures where sku == nil || name == sku?.rawValue {
            var figures = skus[name] ?? StoreReport.SKUFigures(sku: name, watching: 0, waiting: 0)
            for (hour, figure) in hours {
                let recent = hour >= since
                figures.alertsRaised.life = ReportFigures.sum(figures.alertsRaised.life, figure.raised)
                figures.alertsAcknowledged.life = ReportFigures.sum(figures.alertsAcknowledged.life, figure.acknowledged)
                if recent {
                    figures.alertsRaised.last24h = ReportFigures.sum(figures.alertsRaised.last24h, figure.raised)
                    figures.alertsAcknowledged.last24h = ReportFigures.sum(figures.alertsAcknowledged.last24h, figure.acknowledged)
                }
            }
            skus[name] = figures
        }
        return ReportFigures.report(customers: customers.count, skus: skus)
    }

    /// The watches expired at `now`, soonest first (ties in position order), at most `limit` (``WatchTable/expired``).
    func expiredWatches(at now: Date, limit: Int) -> [WatchKey] {
        let due = watches.values.compactMap { watch in watch.expiresAt.flatMap { $0 <= now ? (watch, $0) : nil } }
            .sorted { ($0.1, $0.0.position) < ($1.1, $1.0.position) }
        return (limit < 0 ? due[...] : due.prefix(limit)).map { WatchKey(customer: $0.0.customer, sku: $0.0.sku) }
    }

    /// When the first watch expires after `now`; `nil` when none will.
    func nextExpiry(after now: Date) -> Date? { watches.values.compactMap { $0.expiresAt.flatMap { $0 > now ? $0 : nil } }.min() }
}
