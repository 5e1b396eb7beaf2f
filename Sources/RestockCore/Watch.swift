import Foundation

/// A customer's standing request to hear when a SKU is back: (customer, sku, mode, minQuantity, position, since).
public struct Watch: Sendable, Hashable, Codable {
    /// Who is waiting.
    public let customer: CustomerID
    /// For what.
    public let sku: SKU
    /// Alert once, or on every return.
    public internal(set) var mode: WatchMode
    /// The on-hand quantity at which the watch is satisfied (at least 1).
    public internal(set) var minQuantity: Int
    /// The store's signup counter when the watch was first created; alerts go out in ascending position.
    public let position: UInt64
    /// When the watch was first created.
    public let since: Date
    /// Whether the watch still waits for an alert. It becomes `false` once an `every` watch has been alerted,
    /// and `true` again when stock falls below its minimum. A satisfied watch that still waits was held back
    /// by fair release and goes first on the next rise.
    public internal(set) var isWaiting: Bool
    /// When the watch ends unalerted, on the store's clock; `nil`: never (docs/contract.md, "Watch expiry").
    public internal(set) var expiresAt: Date?

    /// Creates a watch as it was stored; the store creates new ones through
    /// ``Store/subscribe(_:to:mode:minQuantity:expiresAt:)``.
    public init(
        customer: CustomerID, sku: SKU, mode: WatchMode, minQuantity: Int, position: UInt64, since: Date,
        isWaiting: Bool = true, expiresAt: Date? = nil
    ) {
        self.expiresAt = expiresAt
        self.customer = customer
        self.sku = sku
        self.mode = mode
        self.minQuantity = minQuantity
        self.position = position
        self.since = since
        self.isWaiting = isWaiting
    }

    /// Whether `quantity` on hand satisfies this watch.
    public func isSatisfied(by quantity: Int) -> Bool { quantity >= minQuantity }

    /// Whether the watch has expired at `now`.
    public func hasExpired(at now: Date) -> Bool { expiresAt.map { $0 <= now } ?? false }
}
