import Foundation
import Logging
import RestockCore

// Watch expiry (docs/contract.md, "Watch expiry"): a watch whose `expiresAt` has come, on the store's clock, ends
// unalerted, as an unsubscribe would, and its customer's mirror is published again.
//
// The timer is durable: each watch's `expiresAt` is in the `watch` table, under an index, and the store asks it for
// the watches due — when it starts (so a watch that expired while the store was down ends then), before each batch
// of requests (so no request alerts a watch past its time), and about once a second while idle (the service's
// ExpiryTimer wakes the applying stage). Between two lookups, `expiryCheck` holds the earliest time any watch can
// expire, so a batch with nothing due costs one comparison.
extension RequestProcessor {
    /// How many watches one lookup ends at most; the rest end at the next.
    static let expiryBatch = 512

    /// The `expiresAt` a subscribe gives its watch: the request's own, which must be later than the store's clock, or
    /// the store's watch lifetime from now (none when it has none).
    /// - Throws: `invalid-expires-at` when the request's time is not later than now.
    func expiry(of requested: Date?) throws(RequestRefusal) -> Date? {
        let now = clock()
        guard let requested else { return watchLifetime.map { now.addingTimeInterval($0) } }
        guard requested > now else {
            throw RequestRefusal(
                code: .invalidExpiresAt,
                detail: "expiresAt \(Timestamp.string(from: requested)) is not later than the store's clock (\(Timestamp.string(from: now))): a watch must end in the future")
        }
        return requested
    }

    /// Ends every watch due now, in a transaction of its own (the applying stage's idle wakeups and its start).
    func expireDueWatches() throws {
        var changes = StoreChanges()
        var mirrors = Set<CustomerID>()
        try expireDue(into: &changes, refreshing: &mirrors)
        guard !mirrors.isEmpty else { return }
        appendMirrors(of: mirrors, to: &changes)
        try commit(changes, through: appliedThrough)
    }

    /// Ends the watches due now into `changes`, and names their customers in `mirrors`.
    func expireDue(into changes: inout StoreChanges, refreshing mirrors: inout Set<CustomerID>) throws {
        let now = clock()
        guard expiryCheck.withLock({ $0 <= now }) else { return }
        let due = try storage.expiredWatches(at: now, limit: Self.expiryBatch)
        var ended = 0
        for key in due {
            guard let watch = store.expire(key.customer, of: key.sku, at: now) else { continue }
            changes.remove(key)
            mirrors.insert(key.customer)
            ended += 1
            logger.info(
                "a watch expired",
                metadata: [
                    StoreLoggingKeys.customer: "\(watch.customer)", StoreLoggingKeys.sku: "\(watch.sku)",
                    StoreLoggingKeys.position: "\(watch.position)",
                ])
        }
        metrics.watchesExpired.increment(by: ended)
        // More due than one lookup ends: look again at once; otherwise not before the next watch's time.
        let next = due.count >= Self.expiryBatch ? now : try storage.nextExpiry(after: now) ?? .distantFuture
        expiryCheck.withLock { $0 = next }
    }

    /// Queues the mirror of each of `customers`, as the store has it now.
    func appendMirrors(of customers: Set<CustomerID>, to changes: inout StoreChanges) {
        let now = clock()
        for customer in customers.sorted() {
            let mirror = SubscriptionsMirror(store: store.id, customer: customer, watches: store.watchlist(of: customer), updatedAt: now)
            let topic = topics.subscriptions(customer)
            changes.publications.append(Publication(key: topic, topic: topic, payload: mirror.payloadBytes(), retain: true))
        }
        changes.mirrored.formUnion(customers)
    }
}
