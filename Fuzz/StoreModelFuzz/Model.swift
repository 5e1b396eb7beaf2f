import RestockCore

/// The reference model of docs/contract.md, "Semantics": plain arrays and dictionaries, every rule written out, no cleverness.
struct Model {
    struct Watch: Equatable, CustomStringConvertible {
        var customer: String
        var sku: String
        var mode: WatchMode
        var minQuantity: Int
        var position: UInt64
        /// Still waiting for an alert: a new watch is; an `every` watch stops after its alert and waits
        /// again once stock falls below its minQuantity.
        var waiting: Bool

        var description: String { "\(customer)/\(sku) \(mode) min \(minQuantity) #\(position)\(waiting ? " waiting" : "")" }
    }

    struct Alert: Equatable, CustomStringConvertible {
        var sequence: UInt64
        var customer: String
        var sku: String
        var quantity: Int
        var position: UInt64

        var description: String { "alert \(sequence) \(customer)/\(sku) q\(quantity) #\(position)" }
    }

    /// The largest quantity on hand.
    static let maximumQuantity = 1_000_000_000

    let alertsPerUnit: Int
    /// The most watches one customer may have; a restart may change it (a lowered limit keeps every watch).
    var maximumWatchesPerCustomer: Int
    /// Every watch, in signup (position) order.
    var watches: [Watch] = []
    /// On-hand quantities; a SKU not listed has none.
    var quantities: [String: Int] = [:]
    var nextPosition: UInt64 = 1
    var nextAlert: UInt64 = 1

    func quantity(_ sku: String) -> Int { quantities[sku] ?? 0 }

    func index(_ customer: String, _ sku: String) -> Int? {
        watches.firstIndex { $0.customer == customer && $0.sku == sku }
    }

    /// Watches of a SKU in position order.
    func line(_ sku: String) -> [Watch] { watches.filter { $0.sku == sku } }

    /// Watches satisfied by the stock on hand that still wait: only fair release leaves any.
    func heldBack(_ sku: String) -> [Watch] {
        line(sku).filter { $0.waiting && quantity(sku) >= $0.minQuantity }
    }

    private mutating func raise(_ watch: Watch) -> Alert {
        defer { nextAlert += 1 }
        return Alert(sequence: nextAlert, customer: watch.customer, sku: watch.sku, quantity: quantity(watch.sku), position: watch.position)
    }

    enum Refusal: Error, Equatable {
        case invalidMinQuantity, invalidQuantity
        /// The customer has `watching` watches, at least the limit.
        case tooManyWatches(watching: Int)
    }

    /// The watches of one customer.
    func count(_ customer: String) -> Int { watches.count { $0.customer == customer } }

    /// subscribe: a new watch takes the next position; the same terms again change nothing; new terms keep the
    /// position. A watch satisfied at once is alerted at once (and a `once` watch not kept), unless fair release
    /// holds earlier satisfied watches back: then it waits behind them.
    ///
    /// The watch limit: the request is refused, and nothing changes, when it would keep a new watch for a
    /// customer who already has the limit or more (only a restart with a lower limit leaves more).
    mutating func subscribe(
        _ customer: String, _ sku: String, mode: WatchMode, minQuantity: Int
    ) -> Result<(isNew: Bool, changed: Bool, kept: Bool, alert: Alert?), Refusal> {
        let watching = count(customer)
        var trial = self
        let result = trial.subscribeWithoutLimit(customer, sku, mode: mode, minQuantity: minQuantity)
        if case .success(let done) = result, done.isNew, done.kept, watching >= maximumWatchesPerCustomer {
            return .failure(.tooManyWatches(watching: watching))
        }
        self = trial
        return result
    }

    private mutating func subscribeWithoutLimit(
        _ customer: String, _ sku: String, mode: WatchMode, minQuantity: Int
    ) -> Result<(isNew: Bool, changed: Bool, kept: Bool, alert: Alert?), Refusal> {
        guard minQuantity >= 1 else { return .failure(.invalidMinQuantity) }
        let onHand = quantity(sku)
        var watch: Watch
        let existing = index(customer, sku)
        if let existing {
            watch = watches[existing]
            if watch.mode == mode && watch.minQuantity == minQuantity { return .success((false, false, true, nil)) }
            watch.mode = mode
            watch.minQuantity = minQuantity
            if onHand < minQuantity { watch.waiting = true }
        } else {
            watch = Watch(customer: customer, sku: sku, mode: mode, minQuantity: minQuantity, position: nextPosition, waiting: true)
            nextPosition += 1
        }
        var alert: Alert?
        let othersHeldBack = heldBack(sku).contains { $0.customer != customer }
        if watch.waiting && onHand >= minQuantity && !othersHeldBack {
            alert = raise(watch)
            watch.waiting = false
        }
        let kept = !(alert != nil && mode == .once)
        if let existing {
            if kept { watches[existing] = watch } else { watches.remove(at: existing) }
        } else if kept {
            watches.append(watch)
        }
        return .success((existing == nil, true, kept, alert))
    }

    mutating func unsubscribe(_ customer: String, _ sku: String) -> Watch? {
        guard let index = index(customer, sku) else { return nil }
        return watches.remove(at: index)
    }

    mutating func unsubscribeAll(_ customer: String) -> [Watch] {
        let removed = watches.filter { $0.customer == customer }
        watches.removeAll { $0.customer == customer }
        return removed
    }

    enum Change { case set(Int), add(Int) }

    /// A stock change: `set` 0…10^9, `add` keeps the result ≤ 10^9 (and floors it at 0). A watch whose
    /// minQuantity is no longer met waits again; the waiting watches the new quantity satisfies are alerted in
    /// position order — all of them, or with fair release K at most rise×K (none when stock did not rise);
    /// `once` watches go, `every` watches stay and stop waiting.
    mutating func changeStock(_ sku: String, _ change: Change) -> Result<(previous: Int, quantity: Int, alerts: [Alert], removed: [Watch]), Refusal> {
        let previous = quantity(sku)
        let next: Int
        switch change {
        case .set(let value):
            guard value >= 0, value <= Self.maximumQuantity else { return .failure(.invalidQuantity) }
            next = value
        case .add(let delta):
            // In plain arithmetic: refused when previous + delta overflows or passes the maximum.
            let (sum, overflow) = previous.addingReportingOverflow(delta)
            guard !overflow, sum <= Self.maximumQuantity else { return .failure(.invalidQuantity) }
            next = max(0, sum)
        }
        quantities[sku] = next == 0 ? nil : next
        var budget = alertsPerUnit == 0 ? Int.max : max(0, next - previous) * alertsPerUnit
        var alerts: [Alert] = []
        var removed: [Watch] = []
        var kept: [Watch] = []
        for var watch in watches {
            guard watch.sku == sku else {
                kept.append(watch)
                continue
            }
            if next < watch.minQuantity {
                watch.waiting = true
            } else if watch.waiting && budget > 0 {
                budget -= 1
                alerts.append(raise(watch))
                if watch.mode == .once {
                    removed.append(watch)
                    continue
                }
                watch.waiting = false
            }
            kept.append(watch)
        }
        watches = kept
        return .success((previous, next, alerts, removed))
    }
}
