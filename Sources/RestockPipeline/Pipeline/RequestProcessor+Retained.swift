import Foundation
import RestockCore

extension RequestProcessor {
    /// Queues every retained topic the store owns (``retainedPublications(of:in:topics:at:)``): for a broker that lost
    /// them (restarted without persistence), or over what an older instance sent late. The status is the connection's
    /// to publish. Whoever asks says why.
    package func republishRetained() throws {
        var changes = StoreChanges()
        changes.publications = try Self.retainedPublications(of: store, in: storage, topics: topics, at: clock())
        guard !changes.publications.isEmpty else { return }
        pass(try storage.commit(changes), through: appliedThrough)
        let mirrors = changes.publications.filter { $0.topic.hasPrefix("\(topics.root)/customers/") }.count
        logger.notice(
            "publishing every retained topic again",
            metadata: [StoreLoggingKeys.inventory: "\(changes.publications.count - mirrors)", StoreLoggingKeys.mirrors: "\(mirrors)"])
    }

    /// Every retained topic the store owns, as the store has it now: each SKU's inventory, and each customer's mirror —
    /// also one that says the customer watches nothing, for each customer the store has told so.
    package static func retainedPublications(
        of store: Store, in storage: any StoreStorage, topics: RestockTopics, at now: Date
    ) throws -> [Publication] {
        var publications: [Publication] = []
        for (sku, quantity) in try storage.inventory() {
            let record = InventoryRecord(store: store.id, sku: sku, quantity: quantity, updatedAt: now)
            let topic = topics.inventory(sku)
            publications.append(Publication(key: topic, topic: topic, payload: record.payloadBytes(), retain: true))
        }
        let customers = Set(store.snapshot.watches.map(\.customer)).union(try storage.mirroredCustomers())
        for customer in customers.sorted() {
            let mirror = SubscriptionsMirror(store: store.id, customer: customer, watches: store.watchlist(of: customer), updatedAt: now)
            let topic = topics.subscriptions(customer)
            publications.append(Publication(key: topic, topic: topic, payload: mirror.payloadBytes(), retain: true))
        }
        return publications
    }
}
