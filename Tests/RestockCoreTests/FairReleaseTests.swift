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

    @Test("a negative factor is refused")
    func invalidFactor() {
        #expect(throws: RestockError.invalidAlertsPerUnit(-1)) { try Store(id: storeID(), alertsPerUnit: -1) }
    }
}
