import Testing
@testable import RestockCore

@Suite("Seed scenario")
struct SeedScenarioTests {
    @Test("two subscribe, stock arrives, both alerted; one leaves, stock again, only the other")
    func seed() throws {
        let store = makeStore()
        let alice = customer("alice"), bob = customer("bob"), iphone = sku("iphone-15")
        let aliceInbox = RecordingObserver(), bobInbox = RecordingObserver()
        var tokens = Set<ObservationToken>()
        store.observe(alice, with: aliceInbox).store(in: &tokens)
        store.observe(bob, with: bobInbox).store(in: &tokens)

        try store.subscribe(alice, to: iphone, mode: .every)
        try store.subscribe(bob, to: iphone, mode: .every)
        #expect(store.watchers(of: iphone).map(\.customer) == [alice, bob])

        let first = try store.changeStock(of: iphone, .set(5))
        #expect(first.alerts.map(\.customer) == [alice, bob])
        #expect(aliceInbox.recorder.all.count == 1 && bobInbox.recorder.all.count == 1)

        store.unsubscribe(bob, from: iphone)
        try store.changeStock(of: iphone, .set(0))
        let second = try store.changeStock(of: iphone, .set(3))
        #expect(second.alerts.map(\.customer) == [alice])
        #expect(aliceInbox.recorder.all.count == 2 && bobInbox.recorder.all.count == 1)
    }
}
