import Foundation

/// The rules of docs/contract.md, "Semantics" over plain values: watches, inventory, counters; and the in-process
/// observers, whose slots the watches carry. ``Store`` keeps one under its lock.
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

    /// Each SKU's stock, line and held-back count; a SKU with neither stock nor watches has none.
    private var shelves: [SKU: Shelf] = [:]
    /// The SKUs each customer watches.
    private var watchlists: [CustomerID: Watchlist] = [:]
    /// The in-process observers; each customer's slot is stamped on their watches.
    private(set) var observers = CustomerObservers()
    private(set) var nextPosition: UInt64 = 1
    private(set) var nextAlertSequence: UInt64 = 1
    private(set) var watchCount = 0
    /// The arrays the last stock change reported its watches in, for the next one to write into (``ReportLists``).
    private var spareLists = ReportLists()

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
        var shelves: [SKU: Shelf] = [:]
        for (sku, quantity) in snapshot.inventory where quantity > 0 { shelves[sku] = Shelf(quantity: quantity) }
        // A database gives the watches in position order already: sorted again only when they are not. Positions past
        // the bound are left out before anything counts on from them (StoreSnapshot).
        let bound = StoreSnapshot.maximumCounter
        let taken = snapshot.watches.contains { $0.position > bound } ? snapshot.watches.filter { $0.position <= bound } : snapshot.watches
        let ordered = Watch.inPositionOrder(taken)
        // Terms no request could give are left out too (found by an outside trial: a minQuantity of 0 was alerted "back
        // in stock" at a quantity of 0); their positions still count, so that none is given out again.
        let watches = ordered.contains(where: Self.hasInvalidTerms) ? ordered.filter { !Self.hasInvalidTerms($0) } : ordered
        let (kept, watchlists) = Self.inParallel(
            watches.count >= 10_000, { Self.fill(&shelves, with: watches) }, { Self.watchlists(of: watches) })
        self.shelves = shelves
        self.watchlists = watchlists
        watchCount = kept
        let lastPosition = ordered.last?.position ?? 0
        // A counter is kept up to one past the bound: the store gave out the last position or sequence, and gives out
        // no more. Taken back to the bound, it gave the last one out twice (found by an outside trial: one alert id,
        // `{store}-4611686018427387904`, raised before and after a restore).
        nextPosition = max(min(snapshot.nextPosition, bound + 1), lastPosition + 1)
        nextAlertSequence = min(snapshot.nextAlertSequence, bound + 1)
    }

    /// Whether a snapshot's watch has terms no subscribe would take: a minQuantity outside ``RequestLimits/minQuantity``.
    private static func hasInvalidTerms(_ watch: Watch) -> Bool { !RequestLimits.minQuantity.contains(watch.minQuantity) }

    /// Fills each SKU's line with `watches` (in position order), sized before it is filled, and counts how many watches
    /// fair release holds back in each (waiting, and satisfied by the shelf's quantity); returns how many watches were
    /// kept. A repeated customer and SKU is kept once, at its lowest position: a later one is left out (found by an
    /// outside trial: it took the first one's place in line with its own position, and alerts went out of signup order).
    /// No one observes yet: no slot is stamped.
    private static func fill(_ shelves: inout [SKU: Shelf], with watches: [Watch]) -> Int {
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
        for (sku, size) in sizes { shelves[sku, default: Shelf()].line = InsertionOrderedDictionary(minimumCapacity: size) }
        var kept = 0
        // Watches of one SKU tend to come in runs: its shelf is looked up once per run, and changed in place (a shelf read
        // out of the table would be a copy).
        var run: (sku: SKU, shelf: Dictionary<SKU, Shelf>.Index, quantity: Int)?
        for watch in watches {
            if run?.sku != watch.sku {
                let shelf = shelves.index(forKey: watch.sku)!
                run = (watch.sku, shelf, shelves.values[shelf].quantity)
            }
            guard let run, shelves.values[run.shelf].line.insertIfAbsent(LineEntry(watch, observerSlot: 0), forKey: watch.customer)
            else { continue }
            kept += 1
            if watch.isWaiting, watch.isSatisfied(by: run.quantity) { shelves.values[run.shelf].heldBack += 1 }
        }
        return kept
    }

    /// Each customer's watch list of `watches`.
    private static func watchlists(of watches: [Watch]) -> [CustomerID: Watchlist] {
        var watchlists: [CustomerID: Watchlist] = [:]
        watchlists.reserveCapacity(customerEstimate(watches))
        for watch in watches { add(watch.sku, to: &watchlists[watch.customer]) }
        return watchlists
    }

    /// How many customers to make room for among `watches`: as many as there are watches up to a thousand, beyond that
    /// as many as ``DistinctCount`` estimates, with 5% to spare (its error is about 1.6%), never more than the watches.
    /// A table too small grows once and hashes every key again; one sized for every watch is four times too large when
    /// customers watch four SKUs each.
    private static func customerEstimate(_ watches: [Watch]) -> Int {
        guard watches.count > 1_000 else { return watches.count }
        var customers = DistinctCount()
        for watch in watches { customers.add(watch.customer.rawValue) }
        let estimate = customers.estimate
        return min(watches.count, estimate + estimate / 20 + 16)
    }

    /// `first` on this thread and `second` on another at the same time when `worthIt` (a thread costs tens of
    /// microseconds), one after the other otherwise: their results, once both are done. They share no state: each
    /// makes its own value from values it was given.
    private static func inParallel<A: Sendable, B: Sendable>(
        _ worthIt: Bool, _ first: () -> A, _ second: @escaping @Sendable () -> B
    ) -> (A, B) {
        guard worthIt else { return (first(), second()) }
        let other = ThreadResult<B>()
        DispatchQueue.global().async { other.finish(second()) }
        let mine = first()
        return (mine, other.wait())
    }

    /// Adds `sku` to a customer's watch list, making it if there is none: one lookup of the customer.
    private static func add(_ sku: SKU, to watchlist: inout Watchlist?) {
        if watchlist == nil { watchlist = Watchlist(sku) } else { watchlist!.insert(sku) }
    }

    // MARK: Queries (the pull model)

    func quantity(of sku: SKU) -> Int { shelves[sku]?.quantity ?? 0 }

    var stockedSKUs: [SKU: Int] { shelves.compactMapValues { $0.quantity > 0 ? $0.quantity : nil } }

    func watch(customer: CustomerID, sku: SKU) -> Watch? { shelves[sku]?.line[customer]?.watch(of: customer, on: sku) }

    func watchCount(of customer: CustomerID) -> Int { watchlists[customer]?.count ?? 0 }

    /// Customers watching at least one SKU (a customer's watch list goes with their last watch).
    var customerCount: Int { watchlists.count }

    func watchers(of sku: SKU) -> [Watch] { shelves[sku].map { Self.watches(in: $0.line, of: sku) } ?? [] }

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
            watches: shelves.flatMap { sku, shelf in Self.watches(in: shelf.line, of: sku) }, inventory: stockedSKUs,
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
            return SubscribeOutcome(watch: existing, isNew: false, isChanged: false, isKept: true, alert: nil, isAlertWithheld: false)
        }
        if existing == nil {
            // The limit bounds the watches kept: a new `once` watch alerted at once (satisfied, no earlier watch held
            // back by fair release to queue behind, and an alert sequence left) is not kept, so it is taken even at the
            // limit.
            let watching = watchCount(of: customer)
            let alertedAndGone = mode == .once && onHand >= minQuantity && !holdsBack(sku) && hasAlertSequenceLeft
            if watching >= maximumWatchesPerCustomer, !alertedAndGone {
                throw .tooManyWatches(customer: customer, watching: watching, limit: maximumWatchesPerCustomer)
            }
            // The store-wide bound, likewise on the watches kept (issue 32: 100,000 ids subscribing once each took a store
            // to 159 MB and a legitimate subscribe to 6.8 s).
            if let maximumWatches, watchCount >= maximumWatches, !alertedAndGone {
                throw .storeFull(watches: watchCount, limit: maximumWatches)
            }
            // Every new watch takes a position, even one alerted at once and not kept (its alert carries it). Past the
            // last one a restore would leave the watch out, and give its position again (found by an outside trial: a
            // watch at 2^62 in a file changed by hand; the next subscribe was acknowledged, and lost at the restart).
            guard nextPosition <= StoreSnapshot.maximumCounter else { throw .noPositionLeft }
        }

        var watch: Watch
        if var existing {
            // New terms, same place in line.
            if existing.isWaiting, existing.isSatisfied(by: onHand) { shelves[sku]?.heldBack -= 1 }
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
        var isAlertWithheld = false
        if watch.isWaiting, watch.isSatisfied(by: onHand) {
            if !hasAlertSequenceLeft {
                // The last alert sequence is given out: no alert id is given twice, so the watch waits, satisfied.
                shelves[sku]?.heldBack += 1
                isAlertWithheld = true
            } else if holdsBack(sku) {
                // Fair release is holding earlier watches back; this one queues behind them.
                shelves[sku]?.heldBack += 1
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
        return SubscribeOutcome(
            watch: watch, isNew: existing == nil, isChanged: true, isKept: isKept, alert: alert, isAlertWithheld: isAlertWithheld)
    }

    mutating func unsubscribe(customer: CustomerID, sku: SKU) -> Watch? {
        guard let removed = remove(customer: customer, sku: sku) else { return nil }
        if removed.isWaiting, removed.isSatisfied(by: quantity(of: sku)) { shelves[sku]?.heldBack -= 1 }
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
        // The SKU is hashed once: its stock, line and held-back count are one shelf (hashing the SKU was most of a small
        // restock's cost), changed in one access, never copied out.
        guard let shelf = shelves.index(forKey: sku) else {
            // No shelf, no watches: only the stock changes.
            let onHand = try change.applied(to: 0, sku: sku)
            if onHand > 0 { shelves[sku] = Shelf(quantity: onHand) }
            return StockOutcome(
                sku: sku, previousQuantity: 0, quantity: onHand, alerted: [], rearmed: [], withheld: 0, store: store,
                epoch: alertEpoch, firstSequence: nextAlertSequence, at: now)
        }
        // The arrays of the last change's report, given up by the state first: unshared once its caller let it go.
        var lists = ReportLists()
        swap(&lists, &spareLists)
        let walked = try shelves.values[shelf].take(
            change, of: sku, alertsPerUnit: alertsPerUnit, sequencesLeft: alertSequencesLeft, reportingIn: &lists)
        spareLists.keep(walked)
        if walked.isEmpty { shelves.remove(at: shelf) }
        let firstSequence = nextAlertSequence
        nextAlertSequence += UInt64(walked.alerted.count)
        for watch in walked.alerted where watch.entry.mode == .once { forget(watch.customer, sku) }
        return StockOutcome(
            sku: sku, previousQuantity: walked.previous, quantity: walked.quantity, alerted: walked.alerted,
            rearmed: walked.rearmed, withheld: walked.withheld, store: store, epoch: alertEpoch, firstSequence: firstSequence,
            at: now)
    }

    // MARK: Observers

    /// Registers `observer` of `customer` (`nil`: of every customer); a customer's first observer gets them a slot,
    /// stamped on each of their watches.
    mutating func addObserver(_ observer: any RestockObserver, for customer: CustomerID?) -> ObserverRegistration {
        let (registration, newSlot) = observers.add(observer, for: customer)
        if let customer, let newSlot { stamp(newSlot, on: customer) }
        return registration
    }

    /// Unregisters `registration`, already deactivated; a customer's last observer takes their slot off their watches.
    mutating func removeObserver(_ registration: ObserverRegistration) {
        guard let (customer, _) = observers.remove(registration) else { return }
        stamp(0, on: customer)
    }

    /// Takes over the observers of `previous` (a store restored after it was made), stamping each observed
    /// customer's slot on their watches here.
    mutating func takeObservers(from previous: StoreState) {
        observers = previous.observers
        for (customer, slot) in observers.slots { stamp(slot, on: customer) }
    }

    /// Writes `slot` on every watch of `customer`.
    private mutating func stamp(_ slot: UInt32, on customer: CustomerID) {
        for sku in watchlists[customer]?.skus ?? [] {
            shelves[sku]?.line.modifyValue(forKey: customer) { $0.observerSlot = slot }
        }
    }

    // MARK: Bookkeeping

    /// Whether an alert may still be raised: its sequence would be at most ``StoreSnapshot/maximumCounter``.
    private var hasAlertSequenceLeft: Bool { nextAlertSequence <= StoreSnapshot.maximumCounter }

    /// How many alerts may still be raised, each with a sequence of its own up to ``StoreSnapshot/maximumCounter``.
    private var alertSequencesLeft: Int {
        hasAlertSequenceLeft ? Int(StoreSnapshot.maximumCounter - nextAlertSequence + 1) : 0
    }

    /// Raises the alert of `watch`; there must be a sequence left for it (``hasAlertSequenceLeft``).
    private mutating func makeAlert(for watch: Watch, quantity: Int, now: Date) -> RestockAlert {
        defer { nextAlertSequence += 1 }
        return RestockAlert(
            store: store, epoch: alertEpoch, sequence: nextAlertSequence, customer: watch.customer, sku: watch.sku, quantity: quantity,
            position: watch.position, at: now)
    }

    /// Whether fair release holds satisfied watches of `sku` back, so that a newcomer queues behind them. With fair release
    /// off (a store restored from one that had it on) none is held back: the watches it held wait for the SKU's next
    /// stock change, which alerts every satisfied watch, and hold no newcomer back (found by an outside trial: a newcomer
    /// the stock satisfied waited behind them, unalerted).
    private func holdsBack(_ sku: SKU) -> Bool { alertsPerUnit > 0 && (shelves[sku]?.heldBack ?? 0) > 0 }

    private mutating func insert(_ watch: Watch) {
        let entry = LineEntry(watch, observerSlot: observers.slot(of: watch.customer))
        guard shelves[watch.sku, default: Shelf()].line.updateValue(entry, forKey: watch.customer) == nil else { return }
        watchCount += 1
        Self.add(watch.sku, to: &watchlists[watch.customer])
    }

    @discardableResult
    private mutating func remove(customer: CustomerID, sku: SKU) -> Watch? {
        guard let shelf = shelves.index(forKey: sku),
            let removed = shelves.values[shelf].line.removeValue(forKey: customer)?.watch(of: customer, on: sku)
        else { return nil }
        if shelves.values[shelf].isEmpty { shelves.remove(at: shelf) }
        forget(customer, sku)
        return removed
    }

    /// Drops a watch, already out of its SKU's line, from its customer's watch list.
    private mutating func forget(_ customer: CustomerID, _ sku: SKU) {
        watchCount -= 1
        if watchlists[customer]?.remove(sku) == false { watchlists[customer] = nil }
    }
}
