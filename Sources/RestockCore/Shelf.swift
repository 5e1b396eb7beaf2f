/// One SKU's part of a store's state: its stock, its line of watches in signup order (keyed by customer), and how many
/// satisfied watches fair release holds back in it. One table of them, so that a request finds all three with one hash
/// of the SKU (docs/benchmarks.md, "B1, the in-process fan-out").
struct Shelf: Sendable {
    /// The on-hand quantity.
    var quantity = 0
    /// How many waiting watches the quantity satisfies: held back by fair release (while any wait, newcomers wait behind
    /// them), or withheld because the store has given out its last alert sequence.
    var heldBack = 0
    /// The watches, in signup order (``LineEntry``: the watch without its customer and SKU).
    var line = InsertionOrderedDictionary<CustomerID, LineEntry>()

    /// A shelf with nothing on it and no one waiting is not kept.
    var isEmpty: Bool { quantity == 0 && line.isEmpty }
}

extension Shelf {
    /// What a stock change did to a shelf: the watches it alerted and re-armed, in position order.
    struct Walk {
        let previous: Int
        let quantity: Int
        /// The watches alerted, as they are after the change (a `once` watch as it was removed from the line).
        var alerted: [ReportedWatch] = []
        /// The `every` watches that wait again because stock fell below their minimum.
        var rearmed: [ReportedWatch] = []
        /// How many waiting watches the new quantity satisfies were not alerted for want of an alert sequence.
        var withheld = 0
        /// Whether the shelf is left empty, and goes.
        var isEmpty = false
    }

    /// Applies `change` to the quantity and walks the line in place: alerts the waiting watches it satisfies, at most d×K
    /// of them for a rise of d units under fair release (`alertsPerUnit` K; 0 is off) and at most `sequencesLeft` (the
    /// alert sequences the store has left), removing the `once` ones, and re-arms the `every` watches it no longer
    /// satisfies. A satisfied watch not alerted stays waiting, held back. No watch is copied but those reported back, and
    /// no alert is made here (the outcome makes each when it is read).
    /// - Throws: ``RestockError`` for a change out of range; nothing changes then.
    ///
    /// The watches are reported in `lists`' arrays, emptied first and moved into the walk (``ReportLists``).
    mutating func take(
        _ change: StockChange, of sku: SKU, alertsPerUnit: Int, sequencesLeft: Int, reportingIn lists: inout ReportLists
    ) throws(RestockError) -> Walk {
        let onHand = try change.applied(to: quantity, sku: sku)
        var walk = Walk(previous: quantity, quantity: onHand)
        lists.empty()
        swap(&walk.alerted, &lists.alerted)
        swap(&walk.rearmed, &lists.rearmed)
        quantity = onHand
        let rise = onHand - walk.previous
        var budget: Int
        if alertsPerUnit == 0 {
            budget = .max
        } else {
            let (product, overflow) = max(0, rise).multipliedReportingOverflow(by: alertsPerUnit)
            budget = overflow ? .max : product
        }
        // Fewer sequences left than fair release lets through: the alerts past them are withheld.
        let shortfall = budget - min(budget, sequencesLeft)
        budget -= shortfall
        if rise > 0 { walk.alerted.reserveCapacity(min(line.count, budget)) }
        var stillHeldBack = 0
        line.updateEach { customer, watch in
            guard watch.isSatisfied(by: onHand) else {
                if !watch.isWaiting {
                    watch.isWaiting = true
                    walk.rearmed.append(ReportedWatch(customer: customer, entry: watch))
                }
                return true
            }
            guard watch.isWaiting else { return true }
            guard budget > 0 else {
                stillHeldBack += 1
                return true
            }
            budget -= 1
            // An `every` watch is reported as it is after the change: no longer waiting.
            let kept = watch.mode == .every
            if kept { watch.isWaiting = false }
            walk.alerted.append(ReportedWatch(customer: customer, entry: watch))
            return kept
        }
        heldBack = stillHeldBack
        walk.withheld = min(stillHeldBack, shortfall)
        walk.isEmpty = isEmpty
        return walk
    }
}
