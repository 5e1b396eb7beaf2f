/// What a subscribe request did.
public struct SubscribeOutcome: Sendable, Hashable {
    /// The watch after the request. When a `once` watch was alerted at once it is no longer kept,
    /// and this is the watch as it was when removed.
    public let watch: Watch
    /// Whether the request created the watch (false: it already existed and kept its position).
    public let isNew: Bool
    /// Whether the request changed anything (a new watch, or new terms for an existing one).
    public let isChanged: Bool
    /// Whether the watch stays in the store after the request.
    public let isKept: Bool
    /// The alert raised at subscribe time because the watch was already satisfied.
    public let alert: RestockAlert?
}

/// What a stock change did.
public struct StockOutcome: Sendable, Hashable {
    /// The SKU whose stock changed.
    public let sku: SKU
    /// The on-hand quantity before the change.
    public let previousQuantity: Int
    /// The on-hand quantity after the change.
    public let quantity: Int
    /// The alerts raised, in ascending watch position.
    public let alerts: [RestockAlert]
    /// The `once` watches removed because they were alerted.
    public let removedWatches: [Watch]
    /// The `every` watches whose waiting state changed (alerted, or re-armed when stock fell below their minimum).
    public let updatedWatches: [Watch]
}

/// Everything a store needs to carry on where it stopped: what a durable store saves and restores.
public struct StoreSnapshot: Sendable, Hashable {
    /// Every watch, in any order; they are restored in position order.
    public var watches: [Watch]
    /// On-hand quantities; a SKU not listed has none.
    public var inventory: [SKU: Int]
    /// The position the next new watch takes.
    public var nextPosition: UInt64
    /// The sequence number the next alert takes.
    public var nextAlertSequence: UInt64

    /// Creates a snapshot.
    public init(watches: [Watch] = [], inventory: [SKU: Int] = [:], nextPosition: UInt64 = 1, nextAlertSequence: UInt64 = 1) {
        self.watches = watches
        self.inventory = inventory
        self.nextPosition = nextPosition
        self.nextAlertSequence = nextAlertSequence
    }
}
