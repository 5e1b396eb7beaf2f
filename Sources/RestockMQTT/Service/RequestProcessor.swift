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
    @discardableResult
    func drainInbox() throws -> Int {
        var total = 0
        while !Task.isCancelled {
            let batch = try database.pendingRequests(limit: Self.batchSize)
            guard let last = batch.last else { return total }
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

    private func apply(_ request: JournaledRequest, to changes: inout StoreChanges, refreshing mirrors: inout Set<CustomerID>) {
        guard let kind = topics.request(for: request.topic) else {
            logger.warning("ignoring a message on an unexpected topic", metadata: ["topic": "\(request.topic)"])
            return
        }
        let customer: CustomerID?
        let decoded: Result<StoreRequest, RequestRefusal>
        switch kind {
        case .subscribe(let raw), .unsubscribe(let raw):
            guard let id = try? CustomerID(raw) else {
                // No valid customer to answer: log only (DESIGN §3).
                logger.warning("refused a request with an invalid customer id", metadata: ["topic": "\(request.topic)"])
                return
            }
            customer = id
            if case .subscribe = kind {
                decoded = Result { () throws(RequestRefusal) in try RequestDecoder.subscribe(id, payload: request.payload) }
            } else {
                decoded = Result { () throws(RequestRefusal) in try RequestDecoder.unsubscribe(id, payload: request.payload) }
            }
        case .stock:
            customer = nil
            decoded = Result { () throws(RequestRefusal) in try RequestDecoder.stock(payload: request.payload) }
        }

        do {
            switch try decoded.get() {
            case .subscribe(let who, let sku, let mode, let minQuantity):
                let outcome = try perform { () throws(RestockError) in
                    try store.subscribe(who, to: sku, mode: mode, minQuantity: minQuantity)
                }
                if outcome.isChanged {
                    if outcome.isKept { changes.save(outcome.watch) } else { changes.delete(WatchKey(customer: who, sku: sku)) }
                }
                if let alert = outcome.alert { changes.publications.append(publication(of: alert)) }
                mirrors.insert(who)
            case .unsubscribe(let who, let sku):
                if store.unsubscribe(who, from: sku) != nil { changes.delete(WatchKey(customer: who, sku: sku)) }
                mirrors.insert(who)
            case .unsubscribeAll(let who):
                for watch in store.unsubscribeAll(who) { changes.delete(WatchKey(customer: who, sku: watch.sku)) }
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
