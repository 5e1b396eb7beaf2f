import Foundation

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
    /// Whether the watch is satisfied but raised no alert because the store has given out its last alert sequence
    /// (``StoreSnapshot/maximumCounter``): it is kept, waiting, as one fair release holds back, and no alert id is
    /// given twice.
    public let isAlertWithheld: Bool
}

/// What a stock change did.
///
/// The alerts all share the SKU, the quantity, the time and the store's epoch, and take consecutive sequence numbers: the
/// outcome keeps the watches it alerted and makes each alert when it is read, so that a caller that only counts them
/// (or an in-process observer, handed each as it is made) never pays for an array of them.
public struct StockOutcome: Sendable, Hashable {
    /// The SKU whose stock changed.
    public let sku: SKU
    /// The on-hand quantity before the change.
    public let previousQuantity: Int
    /// The on-hand quantity after the change.
    public let quantity: Int
    /// The watches alerted, in ascending position, as they are after the change (a `once` watch as it was removed): each
    /// its customer and line entry, which carries the slot of the customer's observers; the SKU is the outcome's.
    private let alerted: [ReportedWatch]
    /// The `every` watches that wait again because stock fell below their minimum, in ascending position.
    private let rearmed: [ReportedWatch]
    /// How many waiting watches the new quantity satisfies raised no alert because the store has given out its last
    /// alert sequence (``StoreSnapshot/maximumCounter``): they stay waiting, and no alert id is given twice. 0 until then.
    public let alertsWithheld: Int
    private let store: StoreID
    private let epoch: String?
    /// The sequence number of the first alert; the others follow it.
    private let firstSequence: UInt64
    /// When the alerts were raised.
    private let at: Date

    init(
        sku: SKU, previousQuantity: Int, quantity: Int, alerted: [ReportedWatch], rearmed: [ReportedWatch], withheld: Int,
        store: StoreID, epoch: String?, firstSequence: UInt64, at: Date
    ) {
        self.sku = sku
        self.previousQuantity = previousQuantity
        self.quantity = quantity
        self.alerted = alerted
        self.rearmed = rearmed
        self.alertsWithheld = withheld
        self.store = store
        self.epoch = epoch
        self.firstSequence = firstSequence
        self.at = at
    }

    /// The number of alerts raised.
    public var alertCount: Int { alerted.count }

    /// The alerts raised, in ascending watch position: made when read, each time (``alertCount`` counts them).
    public var alerts: [RestockAlert] { alerted.indices.map(alert(at:)) }

    /// The `once` watches removed because they were alerted.
    public var removedWatches: [Watch] { alerted.lazy.filter { $0.entry.mode == .once }.map { $0.watch(on: sku) } }

    /// The `every` watches whose waiting state changed (alerted, or re-armed when stock fell below their minimum), in
    /// ascending position.
    public var updatedWatches: [Watch] {
        let alertedEvery = alerted.lazy.filter { $0.entry.mode == .every }.map { $0.watch(on: sku) }
        let rearmed = rearmed.lazy.map { $0.watch(on: sku) }
        guard !rearmed.isEmpty else { return Array(alertedEvery) }
        guard !alertedEvery.isEmpty else { return Array(rearmed) }
        // Both lists are in position order: merged, as the line was walked.
        var merged: [Watch] = []
        merged.reserveCapacity(rearmed.count + alerted.count)
        var alertedRest = alertedEvery[...], rearmedRest = rearmed[...]
        while let next = alertedRest.first, let other = rearmedRest.first {
            if next.position < other.position {
                merged.append(alertedRest.removeFirst())
            } else {
                merged.append(rearmedRest.removeFirst())
            }
        }
        merged += alertedRest
        merged += rearmedRest
        return merged
    }

    /// Alert `index` (0 through ``alertCount`` − 1).
    func alert(at index: Int) -> RestockAlert {
        // The two fields read from the array in place: a copy of the watch would retain and release all of it.
        RestockAlert(
            store: store, epoch: epoch, sequence: firstSequence + UInt64(index), customer: alerted[index].customer, sku: sku,
            quantity: quantity, position: alerted[index].entry.position, at: at)
    }

    /// The slot of the observers of alert `index`'s customer; 0 when they have none.
    func observerSlot(at index: Int) -> UInt32 { alerted[index].entry.observerSlot }
}

/// Everything a store needs to carry on where it stopped: what a durable store saves and restores.
///
/// A snapshot read back from storage is outside input. A store restored from it leaves out every watch whose position
/// is past ``maximumCounter`` or whose `minQuantity` is outside ``RequestLimits/minQuantity``, and a second watch of one
/// customer and SKU (keeping the lowest position); it takes a counter past ``maximumCounter`` as one past it, so that no
/// position or sequence it counts on from there can overflow. A store whose counter is one past has given out the last
/// position or alert sequence: it takes no new watch (``RestockError/noPositionLeft``), or raises no alert (a satisfied
/// watch stays waiting: ``StockOutcome/alertsWithheld``), so that none is given out twice.
public struct StoreSnapshot: Sendable, Hashable {
    /// The largest position or alert sequence a store gives out: 2^62. A store counts up by one per watch or alert.
    public static let maximumCounter: UInt64 = 1 << 62

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
