import Foundation

/// A watch as its SKU's line keeps it: the customer is the line's key and the SKU is the line's own, so neither is
/// kept twice — with its key, 56 bytes a watch in the line instead of 104 (docs/benchmarks.md, B2's memory per watch).
/// The one-byte fields come last, where they fill what the optional date leaves of its last word.
struct LineEntry: Sendable {
    var minQuantity: Int
    let position: UInt64
    let since: Date
    var expiresAt: Date?
    var mode: WatchMode
    var isWaiting: Bool

    init(_ watch: Watch) {
        mode = watch.mode
        isWaiting = watch.isWaiting
        minQuantity = watch.minQuantity
        position = watch.position
        since = watch.since
        expiresAt = watch.expiresAt
    }

    /// The watch, as ``Watch`` tells it.
    func watch(of customer: CustomerID, on sku: SKU) -> Watch {
        Watch(
            customer: customer, sku: sku, mode: mode, minQuantity: minQuantity, position: position, since: since,
            isWaiting: isWaiting, expiresAt: expiresAt)
    }

    /// Whether `quantity` on hand satisfies the watch.
    func isSatisfied(by quantity: Int) -> Bool { quantity >= minQuantity }
}
