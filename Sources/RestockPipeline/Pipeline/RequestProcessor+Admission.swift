import Foundation
import Logging
import RestockCore

extension RequestProcessor {
    /// Whether `customer`'s request may be applied now; queues the `rate-limited` answer of a refusal when it is
    /// the one to answer.
    func admit(_ customer: CustomerID, _ request: JournaledRequest, into changes: inout StoreChanges) -> Bool {
        let admission = rateLimiter.withLock { $0.admit(customer, at: .now) }
        guard case .refused(let answered, let retryAfter) = admission else { return true }
        guard answered else {
            logger.debug("refused a request over the rate limit, unanswered", metadata: [StoreLoggingKeys.topic: "\(request.topic)"])
            return false
        }
        let limit = rateLimiter.withLock { $0.configuration }
        let refusal = RequestRefusal(code: .rateLimited, detail: limit.refusalDetail(for: customer, retryAfter: retryAfter))
        logger.notice("refused a request", metadata: [StoreLoggingKeys.topic: "\(request.topic)", StoreLoggingKeys.error: "\(refusal)"])
        let report = ErrorReport(refusal: refusal, topic: request.topic, at: clock())
        changes.publications.append(
            Publication(key: "error:\(request.seq):rate-limited", topic: topics.errors(customer), payload: report.payloadBytes(), retain: false))
        return false
    }

    /// Applies a stock change: the inventory, the lines it changed, its alerts, and the inventory record to publish.
    func applyStock(
        _ sku: SKU, _ change: StockChange, to changes: inout StoreChanges, refreshing mirrors: inout Set<CustomerID>,
        tally: inout BatchTally
    ) throws(RequestRefusal) {
        let outcome = try perform { () throws(RestockError) in try store.changeStock(of: sku, change) }
        changes.inventory[sku] = outcome.quantity
        let removed = outcome.removedWatches
        changes.lineChanged(updated: outcome.updatedWatches, removed: removed)
        for watch in removed { mirrors.insert(watch.customer) }
        tally.applied[.stock, default: 0] += 1
        tally.alerts += outcome.alertCount
        if outcome.alertCount > 0 {
            // Made once, from the outcome: the batch's list of alerts takes this array itself when it is the first.
            let alerts = outcome.alerts
            changes.alertsRaised[sku, default: 0] += alerts.count
            if changes.alerts.isEmpty { changes.alerts = alerts } else { changes.alerts += alerts }
            // One record for all the alerts of the change (each rebuilt when published); one row each only if
            // they cannot share one.
            if let batch = AlertBatch(alerts) {
                changes.publications.append(Publication(batch: batch))
            } else {
                changes.publications += alerts.map(publication(of:))
            }
        }
        let record = InventoryRecord(store: store.id, sku: sku, quantity: outcome.quantity, updatedAt: clock())
        let topic = topics.inventory(sku)
        changes.publications.append(Publication(key: topic, topic: topic, payload: record.payloadBytes(), retain: true))
        logger.info(
            "stock changed", metadata: [StoreLoggingKeys.sku: "\(sku)", StoreLoggingKeys.quantity: "\(outcome.quantity)", StoreLoggingKeys.alerts: "\(outcome.alertCount)"])
        if outcome.alertsWithheld > 0 {
            logger.warning(
                "the store has given out the last alert sequence (\(StoreSnapshot.maximumCounter)): \(outcome.alertsWithheld) satisfied watches stay waiting, unalerted",
                metadata: [StoreLoggingKeys.sku: "\(sku)"])
        }
    }

    func perform<T>(_ body: () throws(RestockError) -> T) throws(RequestRefusal) -> T {
        do {
            return try body()
        } catch {
            throw RequestRefusal(error)
        }
    }

    func publication(of alert: RestockAlert) -> Publication {
        var publication = Publication(
            key: Publication.alertKeyPrefix + alert.id, topic: topics.alerts(alert.customer), payload: Array(alert.jsonData()), retain: false)
        publication.sku = alert.sku.rawValue
        return publication
    }

    /// An accepted request, at debug level; nothing is built when debug is off (the hot path of every request).
    func logAccepted(_ request: JournaledRequest, _ kind: String, _ customer: CustomerID, sku: SKU?, position: UInt64?) {
        guard logger.logLevel <= .debug else { return }
        var metadata: Logger.Metadata = [
            StoreLoggingKeys.customer: "\(customer)", StoreLoggingKeys.kind: "\(kind)", StoreLoggingKeys.seq: "\(request.seq)",
        ]
        if let sku { metadata[StoreLoggingKeys.sku] = "\(sku)" }
        if let position { metadata[StoreLoggingKeys.position] = "\(position)" }
        logger.debug("accepted a request", metadata: metadata)
    }
}
