import Testing
@testable import RestockCore

@Suite("Fair release (alertsPerUnit)")
struct FairReleaseTests {
    let airpods = sku("airpods")

    func subscribeTen(_ store: Store) throws {
        for index in 0..<10 { try store.subscribe(customer("c\(index)"), to: airpods) }
    }

    @Test("a rise from 0 alerts at most quantity×K, in position order")
    func fromZero() throws {
        let store = makeStore(alertsPerUnit: 2)
        try subscribeTen(store)
        let alerts = try store.changeStock(of: airpods, .set(3)).alerts
        #expect(alerts.map(\.customer.rawValue) == ["c0", "c1", "c2", "c3", "c4", "c5"])
        #expect(store.watchCount == 4)
    }

    @Test("the others wait for the next rise of d units, which alerts at most d×K")
    func nextRise() throws {
        let store = makeStore(alertsPerUnit: 1)
        try subscribeTen(store)
        #expect(try store.changeStock(of: airpods, .set(2)).alerts.map(\.customer.rawValue) == ["c0", "c1"])
        #expect(try store.changeStock(of: airpods, .add(-1)).alerts.isEmpty)
        #expect(try store.changeStock(of: airpods, .add(3)).alerts.map(\.customer.rawValue) == ["c2", "c3", "c4"])
    }

    @Test("a newcomer waits behind watches that fair release holds back")
    func newcomerQueues() throws {
        let store = makeStore(alertsPerUnit: 1)
        try subscribeTen(store)
        try store.changeStock(of: airpods, .set(1))
        let late = try store.subscribe(customer("late"), to: airpods)
        #expect(late.alert == nil && late.isKept)
        let next = try store.changeStock(of: airpods, .add(9)).alerts.map(\.customer.rawValue)
        #expect(next == ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"])
        #expect(try store.changeStock(of: airpods, .add(1)).alerts.map(\.customer.rawValue) == ["late"])
    }

    @Test("with fair release off, every waiting watch is alerted")
    func off() throws {
        let store = makeStore(alertsPerUnit: 0)
        try subscribeTen(store)
        #expect(try store.changeStock(of: airpods, .set(1)).alerts.count == 10)
    }

    @Test("watches held back with fair release on, restored into a store with it off, hold no newcomer back: one the stock satisfies is alerted at once, and the held-back watches go on the SKU's next stock change; restored with it on, they still do (found by an outside trial: the newcomer waited behind them, unalerted)")
    func heldBackRestoredWithFairReleaseOff() throws {
        let store = makeStore(alertsPerUnit: 1)
        for index in 0..<3 { try store.subscribe(customer("w\(index)"), to: airpods) }
        #expect(try store.changeStock(of: airpods, .set(1)).alerts.map(\.customer.rawValue) == ["w0"])
        let off = try Store(id: storeID(), alertsPerUnit: 0, restoring: store.snapshot, clock: { fixedDate })
        let late = try off.subscribe(customer("late"), to: airpods)
        #expect(late.alert?.customer == customer("late") && !late.isKept)
        #expect(try off.changeStock(of: airpods, .set(1)).alerts.map(\.customer.rawValue) == ["w1", "w2"])
        #expect(off.watchCount == 0)
        let on = try Store(id: storeID(), alertsPerUnit: 1, restoring: store.snapshot, clock: { fixedDate })
        #expect(try on.subscribe(customer("late"), to: airpods).alert == nil)
        #expect(try on.changeStock(of: airpods, .add(3)).alerts.map(\.customer.rawValue) == ["w1", "w2", "late"])
    }

    @Test("a negative factor is refused")
    func invalidFactor() {
        #expect(throws: RestockError.invalidAlertsPerUnit(-1)) { try Store(id: storeID(), alertsPerUnit: -1) }
    }
}
