import Foundation
import Logging
import RestockCore

// Forgetting a customer (docs/contract.md, "Forget a customer"; docs/operations.md, "Forgetting a customer"): one admin
// request removes every watch and row about them, in the batch's transaction, with SQLite's secure_delete on (the
// deleted bytes are overwritten); the request log is then trimmed through the batch (so the customer's old requests,
// and the forget request itself, leave it) and both files' write-ahead logs are checkpointed and truncated. The retained
// mirror is cleared on the broker with an empty retained publish, and the answer goes out last, on
// `P/{store}/admin/forgotten`.
extension RequestProcessor {
    /// Forgets `who` within the batch being applied.
    func forget(_ who: CustomerID, _ request: JournaledRequest, into changes: inout StoreChanges, refreshing mirrors: inout Set<CustomerID>) {
        let removed = store.unsubscribeAll(who)
        for watch in removed { changes.remove(WatchKey(customer: who, sku: watch.sku)) }
        mirrors.remove(who)
        let customerTopics = [topics.alerts(who), topics.subscriptions(who), topics.errors(who)]
        // What earlier requests of this batch queued for them is not published either.
        changes.publications.removeAll { customerTopics.contains($0.topic) }
        changes.forgotten.append(
            StoreChanges.Forgotten(
                customer: who, customerTopics: customerTopics, requestTopics: [topics.subscribe(who), topics.unsubscribe(who)]))
        let mirror = topics.subscriptions(who)
        changes.publications.append(Publication(key: mirror, topic: mirror, payload: [], retain: true))
        let report = ForgottenReport(store: store.id, customer: who, watches: removed.count, at: clock())
        changes.publications.append(
            Publication(key: "forgotten:\(request.seq)", topic: topics.adminForgotten, payload: report.payloadBytes(), retain: false))
        // The line names the request, not the customer: the log is kept longer than the store keeps them.
        logger.notice(
            "forgot a customer: every watch and row about them removed, their retained mirror cleared",
            metadata: [StoreLoggingKeys.seq: "\(request.seq)", StoreLoggingKeys.watches: "\(removed.count)"])
        metrics.customersForgotten.increment()
    }

    /// After a committed batch that forgot customers: the request log loses every request applied (theirs among them),
    /// and both files' write-ahead logs are checkpointed and truncated, so their bytes are gone from the data directory
    /// but for what the outbox still holds for the broker (the empty mirror and the answer, forgotten once acknowledged).
    func eraseForgotten(through last: Int64) {
        do {
            try storage.trimJournal(through: last)
            try storage.checkpoint()
        } catch {
            logger.error(
                "cannot yet erase a forgotten customer's requests from the data directory; the next forget or trim does",
                metadata: [StoreLoggingKeys.error: "\(error)"])
        }
    }
}
