import Foundation
import Synchronization

/// The rules of docs/contract.md, "Semantics" over plain values: watches, inventory, counters. ``Store`` keeps one under a lock.
struct StoreState: Sendable {
    /// The store's options that bound what requests may do; ``Store`` validates them.
    struct Limits: Sendable {
        /// The fair-release factor; 0 is off.
        var alertsPerUnit: Int
        /// The most watches a subscribe may leave one customer with.
        var maximumWatchesPerCustomer: Int
        /// The most watches the store holds; `nil`: no limit.
        var maximumWatches: Int?
    }

    let store: StoreID
    let alertsPerUnit: Int
    let maximumWatchesPerCustomer: Int
    let maximumWatches: Int?
    /// What the ids of the alerts it raises carry besides the sequence (``Store/alertEpoch``).
    let alertEpoch: String?

    /// Watches of each SKU in signup order, keyed by customer (``LineEntry``: the watch without its customer and SKU).
    private var watchers: [SKU: InsertionOrderedDictionary<CustomerID, LineEntry>] = [:]
    /// The SKUs each customer watches.
    private var watchlists: [CustomerID: Watchlist] = [:]
    private var inventory: [SKU: Int] = [:]
    /// Per SKU, how many satisfied watches fair release holds back: while any wait, newcomers wait behind them.
    private var heldBack: [SKU: Int] = [:]
    private(set) var nextPosition: UInt64 = 1
    private(set) var nextAlertSequence: UInt64 = 1
    private(set) var watchCount = 0

    init(store: StoreID, limits: Limits, alertEpoch: String?) {
        self.store = store
        self.alertEpoch = alertEpoch
        self.alertsPerUnit = limits.alertsPerUnit
        self.maximumWatchesPerCustomer = limits.maximumWatchesPerCustomer
        self.maximumWatches = limits.maximumWatches
    }

    /// Restores every watch of the snapshot, even where a customer has more than the limit (data from before
    /// the limit, or a lowered limit): the limit only refuses new watches.
    ///
    /// A restart's whole cost with a million watches: the lines are sized before they are filled (no table grows and
    /// hashes its keys again), and the two tables — the lines by SKU, the watch lists by customer — are built at once,
    /// one on each of two threads (docs/benchmarks.md, B2).
    init(store: StoreID, limits: Limits, alertEpoch: String?, restoring snapshot: StoreSnapshot) {
        self.init(store: store, limits: limits, alertEpoch: alertEpoch)
        inventory = snapshot.inventory.filter { $0.value > 0 }
        // A database gives the watches in position order already: sorted again only when they are not. Positions past
        // the bound are left out before anything counts on from them (StoreSnapshot).
        let bound = StoreSnapshot.maximumCounter
        let taken = snapshot.watches.contains { $0.position > bound } ? snapshot.watches.filter { $0.position <= bound } : snapshot.watches
        let inOrder = zip(taken, taken.dropFirst()).allSatisfy { $0.position < $1.position }
        let watches = inOrder ? taken : taken.sorted { $0.position < $1.position }
        let inventory = self.inventory
        let ((lines, heldBack, kept), watchlists) = Self.inParallel(
            watches.count >= 10_000, { Self.lines(of: watches, inventory: inventory) }, { Self.watchlists(of: watches) })
        self.watchers = lines
        self.watchlists = watchlists
        self.heldBack = heldBack
        watchCount = kept
        let lastPosition = watches.last?.position ?? 0
        nextPosition = max(min(snapshot.nextPosition, bound), lastPosition + 1)
        nextAlertSequence = min(snapshot.nextAlertSequence, bound)
    }

    /// Each SKU's line of `watches` (in position order), sized before it is filled; how many watches fair release holds
    /// back in each (waiting, and satisfied by `inventory`); and how many watches were kept (a repeated customer and SKU
    /// counts once, its last terms kept).
    private static func lines(of watches: [Watch], inventory: [SKU: Int]) -> (
        lines: [SKU: InsertionOrderedDictionary<CustomerID, LineEntry>], heldBack: [SKU: Int], kept: Int
    ) {
        var sizes: [SKU: Int] = [:]
        var counted: (sku: SKU, count: Int)?
        for watch in watches {
            if counted?.sku == watch.sku {
                counted!.count += 1
                continue
            }
            if let counted { sizes[counted.sku, default: 0] += counted.count }
            counted = (watch.sku, 1)
        }
        if let counted { sizes[counted.sku, default: 0] += counted.count }
        var lines = sizes.mapValues { InsertionOrderedDictionary<CustomerID, LineEntry>(minimumCapacity: $0) }
        var heldBack: [SKU: Int] = [:], kept = 0
        // Watches of one SKU tend to come in runs: its line and quantity are looked up once per run.
        var run: (sku: SKU, line: Dictionary<SKU, InsertionOrderedDictionary<CustomerID, LineEntry>>.Index, quantity: Int)?
        for watch in watches {
            if run?.sku != watch.sku {
                run = (watch.sku, lines.index(forKey: watch.sku)!, inventory[watch.sku] ?? 0)
            }
            guard let run, lines.values[run.line].updateValue(LineEntry(watch), forKey: watch.customer) == nil else { continue }
            kept += 1
            if watch.isWaiting, watch.isSatisfied(by: run.quantity) { heldBack[watch.sku, default: 0] += 1 }
        }
        return (lines, heldBack, kept)
    }

    /// Each customer's watch list of `watches`.
    private static func watchlists(of watches: [Watch]) -> [CustomerID: Watchlist] {
        var watchlists: [CustomerID: Watchlist] = [:]
        watchlists.reserveCapacity(customerEstimate(watches.count))
        for watch in watches { add(watch.sku, to: &watchlists[watch.customer]) }
        return watchlists
    }

    /// How many customers to make room for among `watches` watches: all of them up to a hundred thousand (most
    /// customers watch one SKU), half beyond, so that a store whose customers watch several is not given twice the
    /// table it needs; a table too small grows once.
    private static func customerEstimate(_ watches: Int) -> Int {
        watches <= 100_000 ? watches : 100_000 + (watches - 100_000) / 2
    }

    /// `first` on this thread and `second` on another at the same time when `worthIt` (a thread costs tens of
    /// microseconds), one after the other otherwise: their results, once both are done. They share no state: each
    /// makes its own value from values it was given.
    private static func inParallel<A: Sendable, B: Sendable>(
        _ worthIt: Bool, _ first: () -> A, _ second: @escaping @Sendable () -> B
    ) -> (A, B) {
        guard worthIt else { return (first(), second()) }
        let other = Handoff<B>()
        DispatchQueue.global().async { other.finish(second()) }
        let mine = first()
        return (mine, other.wait())
    }

    /// Adds `sku` to a customer's watch list, making it if there is none: one lookup of the customer.
    private static func add(_ sku: SKU, to watchlist: inout Watchlist?) {
        if watchlist == nil { watchlist = Watchlist(sku) } else { watchlist!.insert(sku) }
    }

    // MARK: Queries (the pull model)

    func quantity(of sku: SKU) -> Int { inventory[sku] ?? 0 }

    var stockedSKUs: [SKU: Int] { inventory }

    func watch(customer: CustomerID, sku: SKU) -> Watch? { watchers[sku]?[customer]?.watch(of: customer, on: sku) }

    func watchCount(of customer: CustomerID) -> Int { watchlists[customer]?.count ?? 0 }

    /// Customers watching at least one SKU (a customer's watch list goes with their last watch).
    var customerCount: Int { watchlists.count }

    func watchers(of sku: SKU) -> [Watch] { watchers[sku].map { Self.watches(in: $0, of: sku) } ?? [] }

    /// The watches of a line, in its order.
    private static func watches(in line: InsertionOrderedDictionary<CustomerID, LineEntry>, of sku: SKU) -> [Watch] {
        var watches: [Watch] = []
        watches.reserveCapacity(line.count)
        line.forEach { customer, entry in watches.append(entry.watch(of: customer, on: sku)) }
        return watches
    }

    func watchlist(of customer: CustomerID) -> [Watch] {
        guard let skus = watchlists[customer]?.skus else { return [] }
        return skus.compactMap { watch(customer: customer, sku: $0) }.sorted { $0.position < $1.position }
    }

    var snapshot: StoreSnapshot {
        StoreSnapshot(
            watches: watchers.flatMap { sku, line in Self.watches(in: line, of: sku) }, inventory: inventory,
            nextPosition: nextPosition, nextAlertSequence: nextAlertSequence)
    }

    // MARK: Requests

    mutating func subscribe(
        customer: CustomerID, sku: SKU, mode: WatchMode, minQuantity: Int, expiresAt: Date? = nil, now: Date
    ) throws(RestockError) -> SubscribeOutcome {
        _ = try RequestLimits.checkMinQuantity(minQuantity)
        let onHand = quantity(of: sku)
        let existing = watch(customer: customer, sku: sku)
        if let existing, existing.mode == mode, existing.minQuantity == minQuantity, existing.expiresAt == expiresAt {
            return SubscribeOutcome(watch: existing, isNew: false, isChanged: false, isKept: true, alert: nil)
        }
        if existing == nil {
            // The limit bounds the watches kept: a new `once` watch alerted at once (satisfied, and no earlier
            // watch held back by fair release to queue behind) is not kept, so it is taken even at the limit.
            let watching = watchCount(of: customer)
            let alertedAndGone = mode == .once && onHand >= minQuantity && (heldBack[sku] ?? 0) == 0
            if watching >= maximumWatchesPerCustomer, !alertedAndGone {
                throw .tooManyWatches(customer: customer, watching: watching, limit: maximumWatchesPerCustomer)
            }
            // The store-wide bound, likewise on the watches kept (issue 32: 100,000 ids subscribing once each took a store
            // to 159 MB and a legitimate subscribe to 6.8 s).
            if let maximumWatches, watchCount >= maximumWatches, !alertedAndGone {
                throw .storeFull(watches: watchCount, limit: maximumWatches)
            }
        }

        var watch: Watch
        if var existing {
            // New terms, same place in line.
            if existing.isWaiting, existing.isSatisfied(by: onHand) { heldBack[sku, default: 0] -= 1 }
            existing.mode = mode
            existing.minQuantity = minQuantity
            existing.expiresAt = expiresAt
            if !existing.isSatisfied(by: onHand) { existing.isWaiting = true }
            watch = existing
        } else {
            watch = Watch(
                customer: customer, sku: sku, mode: mode, minQuantity: minQuantity,
                position: nextPosition, since: now, expiresAt: expiresAt)
            nextPosition += 1
        }

        var alert: RestockAlert?
        if watch.isWaiting, watch.isSatisfied(by: onHand) {
            if (heldBack[sku] ?? 0) > 0 {
                // Fair release is holding earlier watches back; this one queues behind them.
                heldBack[sku, default: 0] += 1
            } else {
                alert = makeAlert(for: watch, quantity: onHand, now: now)
                watch.isWaiting = false
            }
        }

        let isKept = !(alert != nil && watch.mode == .once)
        if isKept {
            insert(watch)
        } else if existing != nil {
            remove(customer: customer, sku: sku)
        }
        return SubscribeOutcome(watch: watch, isNew: existing == nil, isChanged: true, isKept: isKept, alert: alert)
    }

    mutating func unsubscribe(customer: CustomerID, sku: SKU) -> Watch? {
        guard let removed = remove(customer: customer, sku: sku) else { return nil }
        if removed.isWaiting, removed.isSatisfied(by: quantity(of: sku)) { heldBack[sku, default: 0] -= 1 }
        return removed
    }

    /// Ends the watch of `customer` on `sku` if it has expired at `now`; returns it, or `nil`.
    mutating func expire(customer: CustomerID, sku: SKU, now: Date) -> Watch? {
        guard let watch = watch(customer: customer, sku: sku), watch.hasExpired(at: now) else { return nil }
        return unsubscribe(customer: customer, sku: sku)
    }

    mutating func unsubscribeAll(customer: CustomerID) -> [Watch] {
        let skus = watchlists[customer]?.skus ?? []
        return skus.compactMap { unsubscribe(customer: customer, sku: $0) }.sorted { $0.position < $1.position }
    }

    /// Applies a stock change and raises the alerts it causes, in position order.
    mutating func changeStock(sku: SKU, change: StockChange, now: Date) throws(RestockError) -> StockOutcome {
        // Each table is searched for the SKU once: hashing the SKU was most of a small restock's cost.
        let stocked = inventory.index(forKey: sku)
        let previous = stocked.map { inventory.values[$0] } ?? 0
        let onHand = try change.applied(to: previous, sku: sku)
        if let stocked {
            if onHand == 0 { inventory.remove(at: stocked) } else { inventory.values[stocked] = onHand }
        } else if onHand > 0 {
            inventory[sku] = onHand
        }

        let rise = onHand - previous
        // Fair release: a rise of d units alerts at most d×K waiting watches; without it, all of them.
        var budget: Int
        if alertsPerUnit == 0 {
            budget = .max
        } else {
            let (product, overflow) = max(0, rise).multipliedReportingOverflow(by: alertsPerUnit)
            budget = overflow ? .max : product
        }

        // The line is walked in place: no watch is copied but those reported back, and no alert is made here (the
        // outcome makes each when it is read).
        var alerted: [Watch] = []
        var rearmed: [Watch] = []
        var stillHeldBack = 0
        let lineIndex = watchers.index(forKey: sku)
        if rise > 0, let lineIndex {
            alerted.reserveCapacity(min(watchers.values[lineIndex].count, budget))
        }
        if let lineIndex {
            watchers.values[lineIndex].updateEach { customer, watch in
                guard watch.isSatisfied(by: onHand) else {
                    if !watch.isWaiting {
                        watch.isWaiting = true
                        rearmed.append(watch.watch(of: customer, on: sku))
                    }
                    return true
                }
                guard watch.isWaiting else { return true }
                guard budget > 0 else {
                    stillHeldBack += 1
                    return true
                }
                budget -= 1
                switch watch.mode {
                case .once:
                    alerted.append(watch.watch(of: customer, on: sku))
                    return false
                case .every:
                    watch.isWaiting = false
                    alerted.append(watch.watch(of: customer, on: sku))
                    return true
                }
            }
            if watchers.values[lineIndex].isEmpty { watchers.remove(at: lineIndex) }
        }
        let firstSequence = nextAlertSequence
        nextAlertSequence += UInt64(alerted.count)
        for watch in alerted where watch.mode == .once { forget(watch) }
        if stillHeldBack > 0 {
            heldBack[sku] = stillHeldBack
        } else if !heldBack.isEmpty {
            heldBack[sku] = nil
        }
        return StockOutcome(
            sku: sku, previousQuantity: previous, quantity: onHand, alerted: alerted, rearmed: rearmed, store: store,
            epoch: alertEpoch, firstSequence: firstSequence, at: now)
    }

    // MARK: Bookkeeping

    private mutating func makeAlert(for watch: Watch, quantity: Int, now: Date) -> RestockAlert {
        defer { nextAlertSequence += 1 }
        return RestockAlert(
            store: store, epoch: alertEpoch, sequence: nextAlertSequence, customer: watch.customer, sku: watch.sku, quantity: quantity,
            position: watch.position, at: now)
    }

    private mutating func insert(_ watch: Watch) {
        guard watchers[watch.sku, default: InsertionOrderedDictionary()].updateValue(LineEntry(watch), forKey: watch.customer) == nil
        else { return }
        watchCount += 1
        Self.add(watch.sku, to: &watchlists[watch.customer])
    }

    @discardableResult
    private mutating func remove(customer: CustomerID, sku: SKU) -> Watch? {
        guard let removed = watchers[sku]?.removeValue(forKey: customer)?.watch(of: customer, on: sku) else { return nil }
        if watchers[sku]?.isEmpty == true { watchers[sku] = nil }
        forget(removed)
        return removed
    }

    /// Drops a watch, already out of its SKU's line, from its customer's watch list.
    private mutating func forget(_ watch: Watch) {
        watchCount -= 1
        if watchlists[watch.customer]?.remove(watch.sku) == false { watchlists[watch.customer] = nil }
    }
}

/// A value made on another thread, waited for on this one.
private final class Handoff<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ made: Value) {
        value.withLock { $0 = made }
        done.signal()
    }

    func wait() -> Value {
        done.wait()
        return value.withLock { $0.take()! }
    }
}
