import Testing
@testable import RestockCore

@Suite("Stock set and add")
struct StockTests {
    @Test("set makes the quantity exactly N")
    func set() throws {
        let store = makeStore()
        try store.changeStock(of: sku("ipad"), .set(7))
        #expect(store.quantity(of: sku("ipad")) == 7)
        try store.changeStock(of: sku("ipad"), .set(2))
        #expect(store.quantity(of: sku("ipad")) == 2)
    }

    @Test("add moves the quantity and never goes below zero")
    func add() throws {
        let store = makeStore()
        let outcome = try store.changeStock(of: sku("ipad"), .add(3))
        #expect(outcome.previousQuantity == 0 && outcome.quantity == 3)
        try store.changeStock(of: sku("ipad"), .add(-1))
        #expect(store.quantity(of: sku("ipad")) == 2)
        let floored = try store.changeStock(of: sku("ipad"), .add(-10))
        #expect(floored.quantity == 0)
        #expect(store.quantity(of: sku("ipad")) == 0)
    }

    @Test("a negative set or an overflow is refused and changes nothing")
    func refused() throws {
        let store = makeStore()
        try store.changeStock(of: sku("ipad"), .set(5))
        #expect(throws: RestockError.stockChangeOutOfRange(field: "set", value: "-1")) { try store.changeStock(of: sku("ipad"), .set(-1)) }
        #expect(throws: RestockError.self) { try store.changeStock(of: sku("ipad"), .add(.max)) }
        #expect(throws: RestockError.self) { try store.changeStock(of: sku("ipad"), .set(Store.maximumQuantity + 1)) }
        #expect(store.quantity(of: sku("ipad")) == 5)
    }

    @Test("an outcome its caller keeps is not changed by the stock changes after it, which fill the lists of the one before")
    func keptOutcomes() throws {
        let store = makeStore()
        for name in ["ann", "bob"] { try store.subscribe(customer(name), to: sku("ipad"), mode: .every) }
        var kept: [(StockOutcome, alerted: [CustomerID], updated: [CustomerID])] = []
        for round in 0..<6 {
            // Rises and falls in turn; every other outcome is let go at once, so its lists are filled again by the next.
            let outcome = try store.changeStock(of: sku("ipad"), .set(round.isMultiple(of: 2) ? 1 : 0))
            if round % 4 < 2 { kept.append((outcome, outcome.alerts.map(\.customer), outcome.updatedWatches.map(\.customer))) }
        }
        #expect(kept.count == 4)
        for (outcome, alerted, updated) in kept {
            #expect(outcome.alerts.map(\.customer) == alerted)
            #expect(outcome.updatedWatches.map(\.customer) == updated)
            #expect(updated == [customer("ann"), customer("bob")])
        }
        #expect(kept.map { $0.0.alertCount } == [2, 0, 2, 0])
        #expect(kept.map { Set($0.0.alerts.map(\.id)).count } == [2, 0, 2, 0])
        #expect(Set(kept.flatMap { $0.0.alerts.map(\.id) }).count == 4)
    }
}
