import Testing
@testable import RestockCore

@Suite("Watch rules (the contract's semantics)")
struct WatchRuleTests {
    let iphone = sku("iphone-15")
    let alice = customer("alice")
    let bob = customer("bob")

    @Test("an alert is raised when stock goes from unsatisfied to satisfied, and not before")
    func satisfiedTransition() throws {
        let store = makeStore()
        try store.subscribe(alice, to: iphone)
        #expect(try store.changeStock(of: iphone, .set(0)).alerts.isEmpty)
        let outcome = try store.changeStock(of: iphone, .set(1))
        #expect(outcome.alerts.map(\.customer) == [alice])
        #expect(outcome.alerts.first?.quantity == 1)
    }

    @Test("a stock change that stays satisfied raises nothing more for an every watch")
    func noAlertWithoutTransition() throws {
        let store = makeStore()
        try store.subscribe(alice, to: iphone, mode: .every)
        #expect(try store.changeStock(of: iphone, .set(3)).alerts.count == 1)
        #expect(try store.changeStock(of: iphone, .add(2)).alerts.isEmpty)
        #expect(try store.changeStock(of: iphone, .add(-1)).alerts.isEmpty)
    }

    @Test("subscribing to a SKU already in stock alerts at once")
    func alertAtSubscribe() throws {
        let store = makeStore()
        try store.changeStock(of: iphone, .set(4))
        let outcome = try store.subscribe(alice, to: iphone)
        #expect(outcome.alert?.customer == alice)
        #expect(outcome.alert?.quantity == 4)
        #expect(!outcome.isKept)
        #expect(store.watchlist(of: alice).isEmpty)
    }

    @Test("once: the watch is removed when alerted")
    func once() throws {
        let store = makeStore()
        try store.subscribe(alice, to: iphone)
        let first = try store.changeStock(of: iphone, .set(1))
        #expect(first.alerts.count == 1)
        #expect(first.removedWatches.map(\.customer) == [alice])
        #expect(store.watch(alice, of: iphone) == nil)
        try store.changeStock(of: iphone, .set(0))
        #expect(try store.changeStock(of: iphone, .set(1)).alerts.isEmpty)
    }

    @Test("every: the watch stays and is alerted on each return")
    func every() throws {
        let store = makeStore()
        try store.subscribe(alice, to: iphone, mode: .every)
        for round in 1...3 {
            let outcome = try store.changeStock(of: iphone, .set(2))
            #expect(outcome.alerts.map(\.customer) == [alice], "round \(round)")
            try store.changeStock(of: iphone, .set(0))
        }
        #expect(store.watch(alice, of: iphone)?.mode == .every)
    }

    @Test("minQuantity: satisfied only at or above the minimum")
    func minQuantity() throws {
        let store = makeStore()
        try store.subscribe(alice, to: iphone, minQuantity: 5)
        try store.subscribe(bob, to: iphone)
        let small = try store.changeStock(of: iphone, .set(4))
        #expect(small.alerts.map(\.customer) == [bob])
        let enough = try store.changeStock(of: iphone, .add(1))
        #expect(enough.alerts.map(\.customer) == [alice])
        #expect(enough.alerts.first?.quantity == 5)
    }

    @Test("minQuantity below 1 is refused")
    func minQuantityRange() {
        let store = makeStore()
        #expect(throws: RestockError.invalidMinQuantity("0")) { try store.subscribe(alice, to: iphone, minQuantity: 0) }
        #expect(store.watchCount == 0)
    }

    @Test("an every watch is re-armed only by falling below its own minimum")
    func everyRearmsPerMinimum() throws {
        let store = makeStore()
        try store.subscribe(alice, to: iphone, mode: .every, minQuantity: 3)
        #expect(try store.changeStock(of: iphone, .set(3)).alerts.count == 1)
        #expect(try store.changeStock(of: iphone, .set(2)).updatedWatches.map(\.isWaiting) == [true])
        #expect(try store.changeStock(of: iphone, .set(3)).alerts.count == 1)
    }

    @Test("subscribing twice keeps the first position and raises nothing new")
    func idempotentSubscribe() throws {
        let store = makeStore()
        let first = try store.subscribe(alice, to: iphone)
        try store.subscribe(bob, to: iphone)
        let again = try store.subscribe(alice, to: iphone)
        #expect(!again.isNew && !again.isChanged)
        #expect(again.watch.position == first.watch.position)
        let changed = try store.subscribe(alice, to: iphone, mode: .every, minQuantity: 2)
        #expect(changed.isChanged && changed.watch.position == first.watch.position)
        #expect(store.watchers(of: iphone).map(\.customer) == [alice, bob])
    }

    @Test("unsubscribing from something not watched is not an error")
    func unsubscribeUnknown() throws {
        let store = makeStore()
        #expect(store.unsubscribe(alice, from: iphone) == nil)
        try store.subscribe(alice, to: iphone)
        try store.subscribe(alice, to: sku("ipad"))
        #expect(store.unsubscribeAll(alice).count == 2)
        #expect(store.watchCount == 0)
    }

    @Test("alert ids are unique and the sequence carries over a snapshot")
    func uniqueIDs() throws {
        let store = makeStore()
        for index in 0..<50 { try store.subscribe(customer("c\(index)"), to: iphone, mode: .every) }
        var ids = Set<String>()
        for _ in 0..<4 {
            for alert in try store.changeStock(of: iphone, .set(1)).alerts { #expect(ids.insert(alert.id).inserted) }
            try store.changeStock(of: iphone, .set(0))
        }
        #expect(ids.count == 200)
        let restored = try Store(id: storeID(), restoring: store.snapshot)
        for alert in try restored.changeStock(of: iphone, .set(1)).alerts { #expect(ids.insert(alert.id).inserted) }
        #expect(ids.count == 250)
    }
}
