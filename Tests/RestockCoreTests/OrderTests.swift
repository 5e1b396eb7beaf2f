import Testing
@testable import RestockCore

@Suite("Signup order")
struct OrderTests {
    @Test("alerts of one stock change are raised in ascending position")
    func ascending() throws {
        let store = makeStore()
        let names = ["zoe", "adam", "mia", "bo"]
        for name in names { try store.subscribe(customer(name), to: sku("watch")) }
        let alerts = try store.changeStock(of: sku("watch"), .set(10)).alerts
        #expect(alerts.map(\.customer.rawValue) == names)
        #expect(alerts.map(\.position) == alerts.map(\.position).sorted())
    }

    @Test("order holds under 10,000 watchers, in the outcome and for observers")
    func tenThousand() throws {
        let store = makeStore()
        let observer = RecordingObserver()
        let token = store.observeAll(with: observer)
        // Signup order differs from name order, so sorting by name would be caught.
        let customers = (0..<10_000).map { customer("c\(($0 * 7_919) % 10_000)") }
        for id in customers { try store.subscribe(id, to: sku("vision-pro")) }
        let alerts = try store.changeStock(of: sku("vision-pro"), .set(1)).alerts
        #expect(alerts.map(\.customer) == customers)
        #expect(zip(alerts, alerts.dropFirst()).allSatisfy { $0.position < $1.position })
        #expect(observer.recorder.all.map(\.id) == alerts.map(\.id))
        token.cancel()
    }

    @Test("a watch that leaves and comes back goes to the end of the line")
    func rejoin() throws {
        let store = makeStore()
        for name in ["a", "b", "c"] { try store.subscribe(customer(name), to: sku("tv")) }
        store.unsubscribe(customer("a"), from: sku("tv"))
        try store.subscribe(customer("a"), to: sku("tv"))
        #expect(store.watchers(of: sku("tv")).map(\.customer.rawValue) == ["b", "c", "a"])
    }
}
