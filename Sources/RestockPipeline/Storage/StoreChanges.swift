import Foundation
import RestockCore

/// What one batch of requests changed, to commit in one transaction.
package struct StoreChanges: Sendable {
    /// What happened to watches, in order.
    package enum WatchChange: Sendable {
        /// A watch made or changed (by customer and SKU).
        case save(Watch)
        /// A watch removed (by customer and SKU).
        case remove(WatchKey)
        /// The waiting flag of these watches (by position) becomes this.
        case setWaiting(Bool, positions: [UInt64])
        /// These watches (by position) are removed.
        case removePositions([UInt64])
    }

    /// The changes to watches, applied in this order.
    package private(set) var watchChanges: [WatchChange] = []
    /// The new on-hand quantity of each SKU whose stock changed.
    package var inventory: [SKU: Int] = [:]
    /// The position the next new watch takes and the sequence number the next alert takes, when they changed.
    package var counters: (nextPosition: UInt64, nextAlertSequence: UInt64)?
    /// The messages to publish, in order.
    package var publications: [Publication] = []
    /// The customers whose mirror this batch publishes: the store owns that retained topic from then on.
    package var mirrored: Set<CustomerID> = []
    /// The alerts this batch raised, in order: handed to in-process observers once it is committed (``StoreView``).
    package var alerts: [RestockAlert] = []
    /// How many alerts of each SKU this batch raised (the store's figures, ``AlertFigures``).
    package var alertsRaised: [SKU: Int] = [:]
    /// When the batch was applied, on the store's clock: the hour its figures count in.
    package var appliedAt = Date()
    /// Dead letters (by their place in the request log) this batch replayed or dropped.
    package var deadLettersRemoved: [Int64] = []
    /// The customers this batch forgot: every row about them goes, before the batch's own messages are queued.
    package var forgotten: [Forgotten] = []
    /// The last inbox entry this batch consumed.
    package var processedThrough: Int64?
    /// Whether the commit must be on the disk before it returns (with every commit before it), as a power cut would
    /// find it: the request log is trimmed only through a commit made durable. Other commits survive the process's
    /// death, and a power cut may take them, which the log then still holds (docs/contract.md, "Durability and
    /// redelivery").
    package var durable = false

    /// No change yet.
    package init() {}

    /// A watch made or changed.
    package mutating func save(_ watch: Watch) { watchChanges.append(.save(watch)) }

    /// A watch removed.
    package mutating func remove(_ key: WatchKey) { watchChanges.append(.remove(key)) }

    /// What a stock change did to its line: `updated` watches changed their waiting flag, `removed` ones are gone.
    package mutating func lineChanged(updated: [Watch], removed: [Watch]) {
        let alerted = updated.filter { !$0.isWaiting }.map(\.position)
        let rearmed = updated.filter(\.isWaiting).map(\.position)
        if !alerted.isEmpty { watchChanges.append(.setWaiting(false, positions: alerted)) }
        if !rearmed.isEmpty { watchChanges.append(.setWaiting(true, positions: rearmed)) }
        if !removed.isEmpty { watchChanges.append(.removePositions(removed.map(\.position))) }
    }
}

extension StoreChanges {
    /// A customer forgotten (an admin's forget request), and the topics whose rows go with them.
    package struct Forgotten: Sendable {
        /// The customer.
        package let customer: CustomerID
        /// Their alerts, subscriptions and errors topics: messages queued there are not published.
        package let customerTopics: [String]
        /// Their subscribe and unsubscribe topics: requests set aside from there go.
        package let requestTopics: [String]
    }
}

/// Identifies a watch: one customer, one SKU.
package struct WatchKey: Sendable, Hashable {
    /// The customer.
    package let customer: CustomerID
    /// The SKU.
    package let sku: SKU

    /// The watch of `customer` on `sku`.
    package init(customer: CustomerID, sku: SKU) {
        self.customer = customer
        self.sku = sku
    }
}
