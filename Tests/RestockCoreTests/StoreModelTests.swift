import Foundation
import Testing
@testable import RestockCore

/// docs/contract.md, "Semantics", as a plain reference model: each SKU's line is an array in position order, and
/// fair release's held-back count is counted from the line whenever it is needed, not kept.
private struct ReferenceStore {
    struct Entry: Equatable {
        var customer: String
        var mode: WatchMode
        var minQuantity: Int
        var position: UInt64
        var isWaiting: Bool
    }

    /// What a stock change did, as the model sees it: alerts as (customer, position, sequence), and the watches it
    /// updated and removed, by position, in line order.
    struct Change: Equatable {
        var alerts: [(customer: String, position: UInt64, sequence: UInt64)]
        var updated: [(position: UInt64, isWaiting: Bool)]
        var removed: [UInt64]

        init(alerts: [(customer: String, position: UInt64, sequence: UInt64)], updated: [(position: UInt64, isWaiting: Bool)], removed: [UInt64]) {
            self.alerts = alerts
            self.updated = updated
            self.removed = removed
        }

        /// What a store's outcome tells, in the model's terms.
        init(_ outcome: StockOutcome) {
            self.init(
                alerts: outcome.alerts.map { ($0.customer.rawValue, $0.position, $0.sequence ?? 0) },
                updated: outcome.updatedWatches.map { ($0.position, $0.isWaiting) },
                removed: outcome.removedWatches.map(\.position))
        }

        static func == (lhs: Change, rhs: Change) -> Bool {
            lhs.alerts.elementsEqual(rhs.alerts) { $0 == $1 } && lhs.updated.elementsEqual(rhs.updated) { $0 == $1 }
                && lhs.removed == rhs.removed
        }
    }

    let alertsPerUnit: Int
    var lines: [String: [Entry]] = [:]
    var onHand: [String: Int] = [:]
    var nextPosition: UInt64 = 1
    var nextSequence: UInt64 = 1

    func heldBack(_ sku: String, except customer: String? = nil) -> Int {
        let quantity = onHand[sku] ?? 0
        return (lines[sku] ?? []).filter { $0.customer != customer && $0.isWaiting && quantity >= $0.minQuantity }.count
    }

    /// Returns the alerted entry, if the subscribe raised one.
    mutating func subscribe(_ customer: String, _ sku: String, mode: WatchMode, minQuantity: Int) -> (position: UInt64, sequence: UInt64)? {
        let quantity = onHand[sku] ?? 0
        var line = lines[sku] ?? []
        let index = line.firstIndex { $0.customer == customer }
        if let index, line[index].mode == mode, line[index].minQuantity == minQuantity { return nil }
        var entry: Entry
        if let index {
            entry = line[index]
            entry.mode = mode
            entry.minQuantity = minQuantity
            if quantity < minQuantity { entry.isWaiting = true }
        } else {
            entry = Entry(customer: customer, mode: mode, minQuantity: minQuantity, position: nextPosition, isWaiting: true)
            nextPosition += 1
        }
        var alert: (UInt64, UInt64)?
        if entry.isWaiting, quantity >= minQuantity, heldBack(sku, except: customer) == 0 {
            alert = (entry.position, nextSequence)
            nextSequence += 1
            entry.isWaiting = false
        }
        if alert != nil, mode == .once {
            if let index { line.remove(at: index) }
        } else if let index {
            line[index] = entry
        } else {
            line.append(entry)
        }
        lines[sku] = line.isEmpty ? nil : line
        return alert
    }

    mutating func unsubscribe(_ customer: String, _ sku: String) {
        lines[sku]?.removeAll { $0.customer == customer }
        if lines[sku]?.isEmpty == true { lines[sku] = nil }
    }

    mutating func changeStock(_ sku: String, to quantity: Int) -> Change {
        let rise = quantity - (onHand[sku] ?? 0)
        onHand[sku] = quantity
        var budget = alertsPerUnit == 0 ? Int.max : max(0, rise) * alertsPerUnit
        var change = Change(alerts: [], updated: [], removed: [])
        var kept: [Entry] = []
        for var entry in lines[sku] ?? [] {
            if quantity < entry.minQuantity {
                if !entry.isWaiting {
                    entry.isWaiting = true
                    change.updated.append((entry.position, true))
                }
            } else if entry.isWaiting, budget > 0 {
                budget -= 1
                change.alerts.append((entry.customer, entry.position, nextSequence))
                nextSequence += 1
                if entry.mode == .once {
                    change.removed.append(entry.position)
                    continue
                }
                entry.isWaiting = false
                change.updated.append((entry.position, false))
            }
            kept.append(entry)
        }
        lines[sku] = kept.isEmpty ? nil : kept
        return change
    }
}

@Suite("The Store against a plain reference model")
struct StoreModelTests {
    @Test("random subscribes, unsubscribes and stock changes: every outcome (alerts and their ids, updated and removed watches, in order) and every line agree with the model", arguments: [0, 1, 2])
    func agreesWithTheModel(alertsPerUnit: Int) throws {
        for seed in UInt64(0)..<20 {
            var random = SplitMix(seed: seed &+ UInt64(alertsPerUnit) &* 1_000)
            let store = try Store(id: storeID(), alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: 1_000, clock: { fixedDate })
            var model = ReferenceStore(alertsPerUnit: alertsPerUnit)
            let customers = (0..<12).map { "c\($0)" }, skus = ["ipad", "mac", "watch"]
            // Every third outcome is kept to the end and read again there: the store writes the next change's report into
            // the arrays of the last one once its caller lets it go (ReportLists), and must never write into one held.
            var held: [(outcome: StockOutcome, expected: ReferenceStore.Change, context: String)] = []
            for step in 0..<400 {
                let who = customers[random.next(below: customers.count)], what = skus[random.next(below: skus.count)]
                let context = "seed \(seed), step \(step)"
                switch random.next(below: 10) {
                case 0..<5:
                    let mode: WatchMode = random.next(below: 2) == 0 ? .once : .every
                    let minimum = 1 + random.next(below: 4)
                    let outcome = try store.subscribe(customer(who), to: sku(what), mode: mode, minQuantity: minimum)
                    let expected = model.subscribe(who, what, mode: mode, minQuantity: minimum)
                    let raised = outcome.alert.map { "position \($0.position), sequence \($0.sequence ?? 0)" }
                    #expect(raised == expected.map { "position \($0.position), sequence \($0.sequence)" }, "\(context)")
                case 5:
                    store.unsubscribe(customer(who), from: sku(what))
                    model.unsubscribe(who, what)
                default:
                    let quantity = random.next(below: 6)
                    let outcome = try store.changeStock(of: sku(what), .set(quantity))
                    let expected = model.changeStock(what, to: quantity)
                    let seen = ReferenceStore.Change(outcome)
                    #expect(seen == expected, "\(context): \(seen) against the model's \(expected)")
                    if step % 3 == 0 { held.append((outcome, expected, context)) }
                    #expect(outcome.alertCount == expected.alerts.count, "\(context)")
                    #expect(outcome.alerts.allSatisfy { $0.sku.rawValue == what && $0.quantity == quantity && $0.at == fixedDate }, "\(context)")
                }
                for what in skus {
                    let line = store.watchers(of: sku(what)).map { ($0.customer.rawValue, $0.position, $0.isWaiting, $0.mode, $0.minQuantity) }
                    let expected = (model.lines[what] ?? []).map { ($0.customer, $0.position, $0.isWaiting, $0.mode, $0.minQuantity) }
                    #expect(line.elementsEqual(expected) { $0 == $1 }, "\(context), line of \(what): \(line) against \(expected)")
                }
            }
            for (outcome, expected, context) in held {
                let seen = ReferenceStore.Change(outcome)
                #expect(seen == expected, "\(context), read again at the end: \(seen) against the model's \(expected)")
            }
        }
    }

    @Test("each alert of a stock change reaches its customer's observers, then those of every customer, in order, built as the outcome reads it")
    func observersHearTheOutcome() throws {
        let store = makeStore()
        let everyone = RecordingObserver(), carol = RecordingObserver()
        let tokens = [store.observeAll(with: everyone), store.observe(customer("carol"), with: carol)]
        for name in ["alice", "bob", "carol"] { try store.subscribe(customer(name), to: sku("ipad"), mode: .every) }
        let outcome = try store.changeStock(of: sku("ipad"), .set(2))
        #expect(everyone.recorder.all == outcome.alerts)
        #expect(carol.recorder.all == outcome.alerts.filter { $0.customer.rawValue == "carol" })
        #expect(outcome.alerts.map(\.id) == ["apple-1", "apple-2", "apple-3"])
        _ = tokens
    }
}

@Suite("In-process observers against a plain reference model")
struct ObserverModelTests {
    @Test("random observers added and cancelled among subscribes, unsubscribes, stock changes and restores: each hears exactly its customer's alerts raised while it is registered, in order", arguments: [0, 1, 2])
    func observersHearTheirCustomers(seedBase: UInt64) throws {
        for seed in seedBase * 100..<seedBase * 100 + 15 {
            var random = SplitMix(seed: seed)
            let store = try Store(id: storeID(), maximumWatchesPerCustomer: 1_000, clock: { fixedDate })
            let customers = (0..<8).map { "c\($0)" }, skus = ["ipad", "mac", "watch"]
            // Each observer: its customer (nil: every customer), its token while registered, what it heard, what it should have.
            var observers: [(customer: String?, token: ObservationToken?, heard: RecordingObserver, expected: [String])] = []
            func raised(_ alerts: [RestockAlert]) {
                for alert in alerts {
                    for index in observers.indices where observers[index].token != nil {
                        guard observers[index].customer == nil || observers[index].customer == alert.customer.rawValue else { continue }
                        observers[index].expected.append(alert.id)
                    }
                }
            }
            for step in 0..<300 {
                let who = customers[random.next(below: customers.count)], what = skus[random.next(below: skus.count)]
                switch random.next(below: 12) {
                case 0, 1:
                    let heard = RecordingObserver()
                    let everyone = random.next(below: 5) == 0
                    let token = everyone ? store.observeAll(with: heard) : store.observe(customer(who), with: heard)
                    observers.append((everyone ? nil : who, token, heard, []))
                case 2:
                    let live = observers.indices.filter { observers[$0].token != nil }
                    guard !live.isEmpty else { continue }
                    let index = live[random.next(below: live.count)]
                    if random.next(below: 2) == 0 { observers[index].token!.cancel() }
                    observers[index].token = nil  // released: cancelled as well
                case 3..<7:
                    let mode: WatchMode = random.next(below: 2) == 0 ? .once : .every
                    let outcome = try store.subscribe(customer(who), to: sku(what), mode: mode, minQuantity: 1 + random.next(below: 3))
                    raised(outcome.alert.map { [$0] } ?? [])
                case 7:
                    if random.next(below: 2) == 0 { store.unsubscribe(customer(who), from: sku(what)) } else { store.unsubscribeAll(customer(who)) }
                case 8:
                    store.restore(store.snapshot)
                default:
                    raised(try store.changeStock(of: sku(what), .set(random.next(below: 5))).alerts)
                }
                for observer in observers {
                    #expect(observer.heard.recorder.all.map(\.id) == observer.expected, "seed \(seed), step \(step), observer of \(observer.customer ?? "everyone")")
                }
                let live = observers.filter { $0.token != nil }
                #expect(store.observerCount == live.count, "seed \(seed), step \(step)")
                #expect(store.observerCount(for: customer(who)) == live.filter { $0.customer == who }.count, "seed \(seed), step \(step)")
            }
        }
    }
}
