import Foundation
import Logging
import RestockCore

/// Applies journaled requests to the in-process ``Store`` in order, and commits each batch — the state it
/// changed, the alerts and mirrors to publish, and the removal of its requests — in one transaction.
///
/// Only the store service's processing task calls it, so the store and its database never disagree
/// about the order of changes.
struct RequestProcessor: Sendable {
    let store: Store
    let topics: RestockTopics
    let database: StoreDatabase
    let logger: Logger
    let clock: @Sendable () -> Date

    /// How many requests one transaction takes at most.
    static let batchSize = 512

    /// Applies every pending request; returns how many there were.
    ///
    /// Crash containment: before a batch is applied its requests are marked as attempted (committed), so a
    /// request that was being applied when the process died is known at the next start. It is then retried
    /// on its own; if the store dies again while applying it, it goes to the dead-letter table and its sender
    /// is told (`request-failed`), and the store carries on with the rest.
    @discardableResult
    func drainInbox() throws -> Int {
        var total = 0
        while !Task.isCancelled {
            let pending = try database.pendingRequests(limit: Self.batchSize)
            guard let first = pending.first else { return total }
            let batch: ArraySlice<JournaledRequest>
            if first.attempts >= 2 {
                try deadLetter(first)
                total += 1
                continue
            } else if first.attempts == 1 {
                logger.warning(
                    "the store stopped while applying a request; retrying it on its own",
                    metadata: ["topic": "\(first.topic)", "seq": "\(first.seq)"])
                batch = pending.prefix(1)
            } else {
                batch = pending.prefix { $0.attempts == 0 }
            }
            guard let last = batch.last else { return total }
            try database.beginAttempt(first.seq...last.seq)
            var changes = StoreChanges()
            var mirrorsToRefresh = Set<CustomerID>()
            for request in batch { apply(request, to: &changes, refreshing: &mirrorsToRefresh) }
            let now = clock()
            for customer in mirrorsToRefresh.sorted() {
                let mirror = SubscriptionsMirror(
                    store: store.id, customer: customer, watches: store.watchlist(of: customer), updatedAt: now)
                let topic = topics.subscriptions(customer)
                changes.publications.append(Publication(key: topic, topic: topic, payload: mirror.payloadBytes(), retain: true))
            }
            changes.mirrored = mirrorsToRefresh
            changes.counters = store.counters
            changes.processedThrough = last.seq
            try database.commit(changes)
            if FaultInjection.crashAfterCommit, changes.publications.contains(where: \.isAlert) {
                FaultInjection.crash("crash-after-commit: alerts committed, none published")
            }
            total += batch.count
        }
        return total
    }

    /// Queues every retained topic the store owns — each SKU's inventory and each customer's mirror, also one
    /// that says the customer watches nothing —
    /// for a broker that lost them (restarted without persistence). The status is the connection's to publish.
    func republishRetained() throws {
        var changes = StoreChanges()
        let now = clock()
        for (sku, quantity) in try database.inventory() {
            let record = InventoryRecord(store: store.id, sku: sku, quantity: quantity, updatedAt: now)
            let topic = topics.inventory(sku)
            changes.publications.append(Publication(key: topic, topic: topic, payload: record.payloadBytes(), retain: true))
        }
        // Every mirror the store owns: customers watching something, and those it told they watch nothing.
        let customers = Set(store.snapshot.watches.map(\.customer)).union(try database.mirroredCustomers())
        for customer in customers.sorted() {
            let mirror = SubscriptionsMirror(store: store.id, customer: customer, watches: store.watchlist(of: customer), updatedAt: now)
            let topic = topics.subscriptions(customer)
            changes.publications.append(Publication(key: topic, topic: topic, payload: mirror.payloadBytes(), retain: true))
        }
        guard !changes.publications.isEmpty else { return }
        try database.commit(changes)
        logger.notice(
            "the broker had no session for the store: publishing every retained topic again",
            metadata: ["inventory": "\(changes.publications.count - customers.count)", "mirrors": "\(customers.count)"])
    }

    /// Sets aside a request that killed the store twice, and tells its sender.
    private func deadLetter(_ request: JournaledRequest) throws {
        logger.error(
            "a request stopped the store twice while it was applied; it is set aside in the dead-letter table, not applied",
            metadata: ["topic": "\(request.topic)", "seq": "\(request.seq)"])
        let refusal = RequestRefusal(
            code: "request-failed",
            detail: "the store failed while applying this request, twice; it was set aside and not applied (request \(request.seq))")
        let now = clock()
        let report = ErrorReport(refusal: refusal, topic: request.topic, at: now)
        // With no valid customer to answer, the admin's errors topic hears of it.
        let topic = errorsTopic(for: request.topic) ?? topics.adminErrors
        try database.deadLetter(
            request, error: Publication(key: "error:\(request.seq):request-failed", topic: topic, payload: report.payloadBytes(), retain: false),
            at: now)
    }

    /// Where refusals of a request on `topic` are answered: the customer's errors topic, the admin's, or
    /// nowhere when the customer id in the topic is not valid.
    private func errorsTopic(for topic: String) -> String? {
        switch topics.request(for: topic) {
        case .subscribe(let raw), .unsubscribe(let raw): (try? CustomerID(raw)).map(topics.errors)
        case .stock: topics.adminErrors
        case nil: nil
        }
    }

    private func apply(_ request: JournaledRequest, to changes: inout StoreChanges, refreshing mirrors: inout Set<CustomerID>) {
        FaultInjection.trapIfChosen(request.payload)
        guard let kind = topics.request(for: request.topic) else {
            logger.warning("ignoring a message on an unexpected topic", metadata: ["topic": "\(request.topic)"])
            return
        }
        let customer: CustomerID?
        switch kind {
        case .subscribe(let raw), .unsubscribe(let raw):
            guard let id = try? CustomerID(raw) else {
                // No valid customer to answer: log only (DESIGN §3).
                logger.warning("refused a request with an invalid customer id", metadata: ["topic": "\(request.topic)"])
                return
            }
            customer = id
        case .stock:
            customer = nil
        }
        let decoded = Result { () throws(RequestRefusal) -> StoreRequest in
            guard !request.retained else { throw RequestDecoder.retainedRequest }
            guard request.size <= RequestDecoder.maximumPayloadSize else { throw RequestDecoder.tooLarge(request.size) }
            switch (kind, customer) {
            case (.subscribe, let id?): return try RequestDecoder.subscribe(id, payload: request.payload)
            case (.unsubscribe, let id?): return try RequestDecoder.unsubscribe(id, payload: request.payload)
            default: return try RequestDecoder.stock(payload: request.payload)
            }
        }

        do {
            switch try decoded.get() {
            case .subscribe(let who, let sku, let mode, let minQuantity):
                let outcome = try perform { () throws(RestockError) in
                    try store.subscribe(who, to: sku, mode: mode, minQuantity: minQuantity)
                }
                if outcome.isChanged {
                    if outcome.isKept { changes.save(outcome.watch) } else { changes.remove(WatchKey(customer: who, sku: sku)) }
                }
                if let alert = outcome.alert { changes.publications.append(publication(of: alert)) }
                mirrors.insert(who)
            case .unsubscribe(let who, let sku):
                if store.unsubscribe(who, from: sku) != nil { changes.remove(WatchKey(customer: who, sku: sku)) }
                mirrors.insert(who)
            case .unsubscribeAll(let who):
                for watch in store.unsubscribeAll(who) { changes.remove(WatchKey(customer: who, sku: watch.sku)) }
                mirrors.insert(who)
            case .stock(let sku, let change):
                let outcome = try perform { () throws(RestockError) in try store.changeStock(of: sku, change) }
                changes.inventory[sku] = outcome.quantity
                changes.lineChanged(updated: outcome.updatedWatches, removed: outcome.removedWatches)
                for watch in outcome.removedWatches { mirrors.insert(watch.customer) }
                // One record for all the alerts of the change (each rebuilt when published); one row each only if
                // they cannot share one.
                if let batch = AlertBatch(outcome.alerts) {
                    changes.publications.append(Publication(batch: batch))
                } else {
                    changes.publications += outcome.alerts.map(publication(of:))
                }
                let record = InventoryRecord(store: store.id, sku: sku, quantity: outcome.quantity, updatedAt: clock())
                let topic = topics.inventory(sku)
                changes.publications.append(Publication(key: topic, topic: topic, payload: record.payloadBytes(), retain: true))
                logger.info(
                    "stock changed", metadata: ["sku": "\(sku)", "quantity": "\(outcome.quantity)", "alerts": "\(outcome.alerts.count)"])
            }
        } catch {
            let refusal = error
            logger.notice("refused a request", metadata: ["topic": "\(request.topic)", "error": "\(refusal)"])
            let report = ErrorReport(refusal: refusal, topic: request.topic, at: clock())
            let topic = customer.map(topics.errors) ?? topics.adminErrors
            changes.publications.append(
                Publication(key: "error:\(request.seq):\(UUID().uuidString)", topic: topic, payload: report.payloadBytes(), retain: false))
        }
    }

    private func perform<T>(_ body: () throws(RestockError) -> T) throws(RequestRefusal) -> T {
        do {
            return try body()
        } catch {
            throw RequestRefusal(error)
        }
    }

    private func publication(of alert: RestockAlert) -> Publication {
        Publication(key: Publication.alertKeyPrefix + alert.id, topic: topics.alerts(alert.customer), payload: Array(alert.jsonData()), retain: false)
    }
}
