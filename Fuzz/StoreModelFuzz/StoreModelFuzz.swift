import Foundation
import FuzzSupport
import RestockCore

// Fuzz target (c): the fuzzer's bytes are a fair-release factor and a sequence of requests, applied to a `Store`
// and to the reference model (Model.swift); after every step the two must agree, and the rules of docs/contract.md, "Semantics"
// are checked on what the store did:
// - positions unique, and increasing in signup order, in every SKU's line and every customer's list;
// - the alerts of one change in ascending position, each for a watch the new quantity satisfies;
// - quantities 0…10^9;
// - a `once` watch removed when alerted, an `every` watch kept;
// - minQuantity: an alert when the quantity goes from below minQuantity to at least it, or at subscribe time
//   when already satisfied (with fair release off, a stock change alerts exactly those watches);
// - fair release: a rise by d alerts at most d×K watches (from 0: quantity×K), in position order;
// - alert ids unique, and the same as `{store}-{sequence}` of the model's count;
// - a refusal (RestockError) leaves the store unchanged (the store may refuse, beyond what the model refuses,
//   a minQuantity over 10^9 or an add beyond ±10^9: the limits of the request contract);
// - a store restored from its snapshot carries on the same (the "restart" step), with every watch even when it
//   restores under a lower watch limit;
// - the per-customer watch limit: a subscribe that would keep a new watch for a customer at or over the limit is
//   refused with too-many-watches (the customer's count and the limit) and changes nothing; no accepted request
//   takes a customer over it; the store's count of each customer's watches is the model's.
//
// Input: byte 0 picks K (alertsPerUnit: byte % 4) and the watch limit (byte / 4 % 4: the default, or 1, 2, 3;
// small, so that 3 customers × 3 SKUs reach it often); then each step is an operation byte and its arguments
// (a restart's argument picks the restored store's limit: 0 keeps it, else 1, 2, 3 or the default).

@_cdecl("StoreModelFuzz_main")
func storeModelFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzz(data!, size) }
}

let storeID = try! StoreID("apple")
let customers = ["alice", "bob", "carol"].map { try! CustomerID($0) }
let skus = ["x", "y", "z"].map { try! SKU($0) }
let now: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_800_000_000) }
/// The most steps one input runs (longer inputs are cut there, so every run is quick).
let maximumSteps = 64
/// The watch limits a run picks from: the default first (so the seeds from before the limit keep their meaning),
/// then limits the 3 SKUs reach.
let limits = [Store.defaultMaximumWatchesPerCustomer, 1, 2, 3]

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let first = input.byte()
    let alertsPerUnit = Int(first % 4)
    var run = Run(alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: limits[Int(first / 4) % limits.count])
    var steps = 0
    while !input.isAtEnd && steps < maximumSteps {
        steps += 1
        let operation = input.byte()
        let customer = input.pick(customers)
        let sku = input.pick(skus)
        switch operation % 10 {
        case 0, 1, 2:
            let mode: WatchMode = input.byte() & 1 == 0 ? .once : .every
            run.subscribe(customer, sku, mode: mode, minQuantity: input.number(small: -1...6))
        case 3:
            run.unsubscribe(customer, sku)
        case 4:
            run.unsubscribeAll(customer)
        case 5, 6:
            run.changeStock(sku, .set(input.number(small: -1...8)))
        case 7, 8:
            run.changeStock(sku, .add(input.number(small: -4...5)))
        default:
            let choice = Int(input.byte()) % (limits.count + 1)
            run.restart(maximumWatchesPerCustomer: choice == 0 ? run.maximumWatchesPerCustomer : limits[choice - 1])
        }
        run.compare()
    }
    return 0
}

/// One run: the store, the model, and what has been seen.
struct Run {
    let alertsPerUnit: Int
    /// The watch limit the run started with, and the current one (a restart may change it).
    let startingLimit: Int
    var maximumWatchesPerCustomer: Int
    var store: Store
    var model: Model
    var alertIDs: Set<String> = []
    /// The steps so far, for the message of a failed check.
    var log: [Step] = []

    init(alertsPerUnit: Int, maximumWatchesPerCustomer: Int) {
        self.alertsPerUnit = alertsPerUnit
        self.maximumWatchesPerCustomer = maximumWatchesPerCustomer
        startingLimit = maximumWatchesPerCustomer
        store = try! Store(id: storeID, alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: maximumWatchesPerCustomer, clock: now)
        model = Model(alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: maximumWatchesPerCustomer)
    }

    func fail(_ message: String) -> Never {
        fatalError("\(message)\nsteps (K=\(alertsPerUnit), watch limit \(startingLimit)):\n  " + log.map(\.description).joined(separator: "\n  "))
    }

    func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fail(message()) }
    }

    /// Checks alerts the store raised against the model's, and that no id repeats.
    mutating func match(_ alerts: [RestockAlert], _ expected: [Model.Alert], context: String) {
        expect(
            alerts.count == expected.count,
            "\(context): the store raised \(alerts.map { "\($0.customer)#\($0.position)" }), the model \(expected)")
        for (alert, wanted) in zip(alerts, expected) {
            expect(
                alert.customer.rawValue == wanted.customer && alert.sku.rawValue == wanted.sku && alert.quantity == wanted.quantity
                    && alert.position == wanted.position && alert.store == storeID,
                "\(context): the store raised \(alert.customer)/\(alert.sku) q\(alert.quantity) #\(alert.position), the model \(wanted)")
            expect(alert.id == "\(storeID)-\(wanted.sequence)", "\(context): alert id \(alert.id), expected \(storeID)-\(wanted.sequence)")
            expect(alertIDs.insert(alert.id).inserted, "\(context): alert id \(alert.id) raised twice")
        }
        for (earlier, later) in zip(alerts, alerts.dropFirst()) {
            expect(earlier.position < later.position, "\(context): alerts out of position order: \(earlier.position) then \(later.position)")
        }
    }

    mutating func subscribe(_ customer: CustomerID, _ sku: SKU, mode: WatchMode, minQuantity: Int) {
        log.append(.subscribe(customer, sku, mode, minQuantity))
        let before = store.snapshot
        let previousModel = model
        let expected = model.subscribe(customer.rawValue, sku.rawValue, mode: mode, minQuantity: minQuantity)
        do throws(RestockError) {
            let outcome = try store.subscribe(customer, to: sku, mode: mode, minQuantity: minQuantity)
            guard case .success(let wanted) = expected else { fail("the store accepted what the model refuses (\(expected))") }
            expect(
                outcome.isNew == wanted.isNew && outcome.isChanged == wanted.changed && outcome.isKept == wanted.kept,
                "new/changed/kept \(outcome.isNew)/\(outcome.isChanged)/\(outcome.isKept), the model \(wanted.isNew)/\(wanted.changed)/\(wanted.kept)")
            match(outcome.alert.map { [$0] } ?? [], wanted.alert.map { [$0] } ?? [], context: "subscribe")
            if outcome.isNew && outcome.isKept {
                let count = store.watchCount(of: customer)
                expect(count <= maximumWatchesPerCustomer, "a new watch took \(customer) to \(count) watches, over the limit \(maximumWatchesPerCustomer)")
            }
            if let alert = outcome.alert {
                expect(store.quantity(of: sku) >= minQuantity, "alerted at subscribe time with \(store.quantity(of: sku)) on hand, minQuantity \(minQuantity)")
                expect((store.watch(customer, of: sku) == nil) == (mode == .once), "after alert \(alert.id) the watch is \(String(describing: store.watch(customer, of: sku)))")
            }
        } catch {
            switch expected {
            case .failure(.invalidMinQuantity):
                expect(error == .invalidMinQuantity(String(minQuantity)), "the store refused with \(error)")
            case .failure(.tooManyWatches(let watching)) where minQuantity <= Model.maximumQuantity:
                let wanted = RestockError.tooManyWatches(customer: customer, watching: watching, limit: maximumWatchesPerCustomer)
                expect(error == wanted, "the store refused with \(error), the model with \(wanted)")
                expect(error.code == "too-many-watches", "too many watches refused with code \(error.code)")
            default:
                // The store may also refuse a minQuantity beyond the contract's 10^9 (the model takes any ≥ 1), and
                // checks it before the watch limit.
                expect(minQuantity > Model.maximumQuantity && error.code == "invalid-min-quantity", "the store refused with \(error), the model \(expected)")
                model = previousModel
            }
            expect(store.snapshot == before, "a refused subscribe changed the store")
        }
    }

    mutating func unsubscribe(_ customer: CustomerID, _ sku: SKU) {
        log.append(.unsubscribe(customer, sku))
        let removed = store.unsubscribe(customer, from: sku)
        let expected = model.unsubscribe(customer.rawValue, sku.rawValue)
        expect(same(removed.map { [$0] } ?? [], expected.map { [$0] } ?? []), "unsubscribe removed \(String(describing: removed.map(describe))), the model \(String(describing: expected))")
    }

    mutating func unsubscribeAll(_ customer: CustomerID) {
        log.append(.unsubscribeAll(customer))
        let removed = store.unsubscribeAll(customer)
        let expected = model.unsubscribeAll(customer.rawValue)
        expect(same(removed, expected), "unsubscribe-all removed \(removed.map(describe)), the model \(expected)")
    }

    mutating func changeStock(_ sku: SKU, _ change: StockChange) {
        log.append(.stock(sku, change))
        let before = store.snapshot
        let line = store.watchers(of: sku)
        let modelChange: Model.Change
        switch change {
        case .set(let value): modelChange = .set(value)
        case .add(let delta): modelChange = .add(delta)
        }
        let previousModel = model
        let expected = model.changeStock(sku.rawValue, modelChange)
        do throws(RestockError) {
            let outcome = try store.changeStock(of: sku, change)
            guard case .success(let wanted) = expected else { fail("the store accepted what the model refuses: \(outcome.quantity) on hand") }
            expect(
                outcome.previousQuantity == wanted.previous && outcome.quantity == wanted.quantity,
                "quantity \(outcome.previousQuantity) → \(outcome.quantity), the model \(wanted.previous) → \(wanted.quantity)")
            expect((0...Store.maximumQuantity).contains(outcome.quantity), "quantity \(outcome.quantity) out of range")
            match(outcome.alerts, wanted.alerts, context: "stock")
            expect(same(outcome.removedWatches, wanted.removed), "removed \(outcome.removedWatches.map(describe)), the model \(wanted.removed)")

            // The rules, on what the store did, independently of the model.
            let rise = outcome.quantity - outcome.previousQuantity
            if alertsPerUnit > 0 {
                expect(outcome.alerts.count <= max(0, rise) * alertsPerUnit, "a rise of \(rise) with K=\(alertsPerUnit) raised \(outcome.alerts.count) alerts")
            }
            for alert in outcome.alerts {
                guard let watch = line.first(where: { $0.customer == alert.customer }) else { fail("alert \(alert.id) for a customer not in the line") }
                expect(outcome.quantity >= watch.minQuantity, "alert \(alert.id) with \(outcome.quantity) on hand for minQuantity \(watch.minQuantity)")
                if alertsPerUnit == 0 {
                    expect(outcome.previousQuantity < watch.minQuantity, "alert \(alert.id): \(outcome.previousQuantity) on hand already met minQuantity \(watch.minQuantity)")
                }
                let after = store.watch(alert.customer, of: sku)
                switch watch.mode {
                case .once: expect(after == nil, "once watch \(describe(watch)) kept after alert \(alert.id)")
                case .every: expect(after?.position == watch.position && after?.isWaiting == false, "every watch \(describe(watch)) after its alert: \(String(describing: after.map(describe)))")
                }
            }
            if alertsPerUnit == 0 {
                // Fair release off: every watch that goes from unmet to met is alerted.
                let due = line.filter { $0.isWaiting && outcome.previousQuantity < $0.minQuantity && outcome.quantity >= $0.minQuantity }
                expect(due.map(\.position) == outcome.alerts.map(\.position), "due \(due.map(describe)), alerted \(outcome.alerts.map(\.position))")
            }
        } catch {
            if case .success = expected {
                // The store may also refuse an add beyond the contract's ±10^9 (the model floors any sum at 0).
                guard case .add(let delta) = change, delta.magnitude > UInt(Model.maximumQuantity) else {
                    fail("the store refused with \(error), the model accepts")
                }
                model = previousModel
            }
            expect(error.code == "invalid-quantity", "refused with code \(error.code)")
            expect(store.snapshot == before, "a refused stock change changed the store")
        }
    }

    /// A restart: a new store from the old one's snapshot, with the watch limit `maximumWatchesPerCustomer`
    /// (lower than a customer's count, it keeps their watches and refuses new ones).
    mutating func restart(maximumWatchesPerCustomer: Int) {
        log.append(.restart(maximumWatchesPerCustomer))
        self.maximumWatchesPerCustomer = maximumWatchesPerCustomer
        model.maximumWatchesPerCustomer = maximumWatchesPerCustomer
        store = try! Store(
            id: storeID, alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: maximumWatchesPerCustomer, restoring: store.snapshot,
            clock: now)
    }

    /// The whole state of the store equals the model's, and keeps the invariants.
    func compare() {
        for sku in skus {
            let line = store.watchers(of: sku)
            let expected = model.line(sku.rawValue)
            expect(same(line, expected), "line of \(sku): \(line.map(describe)), the model \(expected)")
            for (earlier, later) in zip(line, line.dropFirst()) {
                expect(earlier.position < later.position, "line of \(sku) out of position order")
            }
            expect(store.quantity(of: sku) == model.quantity(sku.rawValue), "\(sku): \(store.quantity(of: sku)) on hand, the model \(model.quantity(sku.rawValue))")
            expect((0...Store.maximumQuantity).contains(store.quantity(of: sku)), "\(sku): \(store.quantity(of: sku)) on hand")
            if alertsPerUnit == 0 {
                expect(!line.contains { $0.isWaiting && $0.isSatisfied(by: store.quantity(of: sku)) }, "fair release is off, yet \(sku) has a satisfied watch waiting")
            }
        }
        for customer in customers {
            let list = store.watchlist(of: customer)
            let expected = model.watches.filter { $0.customer == customer.rawValue }
            expect(same(list, expected), "watch list of \(customer): \(list.map(describe)), the model \(expected)")
            expect(store.watchCount(of: customer) == list.count, "watchCount(of: \(customer)) \(store.watchCount(of: customer)), the list \(list.count)")
        }
        expect(store.watchCount == model.watches.count, "watchCount \(store.watchCount), the model \(model.watches.count)")
        expect(Set(model.watches.map(\.position)).count == model.watches.count, "model: positions repeat")
        let inventory = store.inventory
        expect(
            inventory.count == model.quantities.count && inventory.allSatisfy { model.quantities[$0.key.rawValue] == $0.value },
            "inventory \(store.inventory), the model \(model.quantities)")
        let counters = store.counters
        expect(
            counters.nextPosition == model.nextPosition && counters.nextAlertSequence == model.nextAlert,
            "counters \(counters), the model \(model.nextPosition), \(model.nextAlert)")
    }
}

/// One step of a run, as the message of a failed check shows it.
enum Step: CustomStringConvertible {
    case subscribe(CustomerID, SKU, WatchMode, Int)
    case unsubscribe(CustomerID, SKU)
    case unsubscribeAll(CustomerID)
    case stock(SKU, StockChange)
    case restart(Int)

    var description: String {
        switch self {
        case .subscribe(let customer, let sku, let mode, let minQuantity): "subscribe \(customer) \(sku) \(mode) minQuantity \(minQuantity)"
        case .unsubscribe(let customer, let sku): "unsubscribe \(customer) \(sku)"
        case .unsubscribeAll(let customer): "unsubscribe all \(customer)"
        case .stock(let sku, let change): "stock \(sku) \(change)"
        case .restart(let limit): "restart with watch limit \(limit)"
        }
    }
}

/// Whether the store's watches are the model's, field by field, in the same order.
func same(_ watches: [Watch], _ expected: [Model.Watch]) -> Bool {
    guard watches.count == expected.count else { return false }
    for (watch, wanted) in zip(watches, expected) {
        guard watch.customer.rawValue == wanted.customer, watch.sku.rawValue == wanted.sku, watch.mode == wanted.mode,
            watch.minQuantity == wanted.minQuantity, watch.position == wanted.position, watch.isWaiting == wanted.waiting
        else { return false }
    }
    return true
}

/// A watch written as the model writes its own.
func describe(_ watch: Watch) -> String {
    Model.Watch(
        customer: watch.customer.rawValue, sku: watch.sku.rawValue, mode: watch.mode, minQuantity: watch.minQuantity,
        position: watch.position, waiting: watch.isWaiting
    ).description
}
