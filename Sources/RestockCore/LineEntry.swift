import Foundation

/// A watch as its SKU's line keeps it: the customer is the line's key and the SKU is the line's own, so neither is
/// kept twice — with its key, 56 bytes a watch in the line instead of 104 (docs/benchmarks.md, B2's memory per watch).
/// The small fields come last, where they fill what the optional date leaves of its last word: the slot costs no byte.
struct LineEntry: Sendable {
    var minQuantity: Int
    let position: UInt64
    let since: Date
    var expiresAt: Date?
    var mode: WatchMode
    var isWaiting: Bool
    /// The slot of the customer's in-process observers (``CustomerObservers``); 0 while they have none.
    var observerSlot: UInt32

    init(_ watch: Watch, observerSlot: UInt32) {
        self.observerSlot = observerSlot
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

/// A watch a stock change reports back: its customer and its line entry as they are after the change; the SKU is the
/// outcome's. Half a ``Watch``'s copy: one identifier, not two (docs/benchmarks.md, "B1, the in-process fan-out").
struct ReportedWatch: Sendable, Hashable {
    let customer: CustomerID
    let entry: LineEntry

    /// The watch, as ``Watch`` tells it.
    func watch(on sku: SKU) -> Watch { entry.watch(of: customer, on: sku) }

    /// Equal when the watches they tell are: the observer slot is routing, not part of the watch.
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.customer == rhs.customer && lhs.entry.position == rhs.entry.position && lhs.entry.minQuantity == rhs.entry.minQuantity
            && lhs.entry.since == rhs.entry.since && lhs.entry.expiresAt == rhs.entry.expiresAt && lhs.entry.mode == rhs.entry.mode
            && lhs.entry.isWaiting == rhs.entry.isWaiting
    }

    /// Hashes the customer and the position, which name the watch.
    func hash(into hasher: inout Hasher) {
        hasher.combine(customer)
        hasher.combine(entry.position)
    }
}
