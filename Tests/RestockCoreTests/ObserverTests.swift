import Synchronization
import Deadlines
import Testing
@testable import RestockCore

@Suite("In-process observers")
struct ObserverTests {
    let iphone = sku("iphone-15")
    let alice = customer("alice")
    let bob = customer("bob")

    @Test("an observer hears only its customer's alerts while its token lives")
    func tokenScope() throws {
        let store = makeStore()
        let observer = RecordingObserver()
        let token = store.observe(alice, with: observer)
        try store.subscribe(alice, to: iphone, mode: .every)
        try store.subscribe(bob, to: iphone, mode: .every)
        try store.changeStock(of: iphone, .set(1))
        #expect(observer.recorder.all.map(\.customer) == [alice])
        token.cancel()
        #expect(!token.isActive)
        try store.changeStock(of: iphone, .set(0))
        try store.changeStock(of: iphone, .set(1))
        #expect(observer.recorder.all.count == 1)
        #expect(store.observerCount == 0)
    }

    @Test("releasing the token unregisters the observer: no lapsed listener")
    func releasedToken() throws {
        let store = makeStore()
        let observer = RecordingObserver()
        var token: ObservationToken? = store.observe(alice, with: observer)
        #expect(store.observerCount(for: alice) == 1)
        try store.subscribe(alice, to: iphone)
        _ = token
        token = nil
        #expect(store.observerCount(for: alice) == 0)
        try store.changeStock(of: iphone, .set(1))
        #expect(observer.recorder.all.isEmpty)
    }

    @Test("an observer released while a notification is under way is not called after that")
    func releasedDuringNotification() throws {
        let store = makeStore()
        let late = RecordingObserver()
        let lateToken = Mutex<ObservationToken?>(nil)
        // alice's observer runs first (alice signed up first) and releases bob's observer.
        let first = store.observe(alice) { _ in lateToken.withLock { $0 = nil } }
        lateToken.withLock { $0 = store.observe(bob, with: late) }
        try store.subscribe(alice, to: iphone)
        try store.subscribe(bob, to: iphone)
        let outcome = try store.changeStock(of: iphone, .set(2))
        #expect(outcome.alerts.count == 2)
        #expect(late.recorder.all.isEmpty)
        first.cancel()
    }

    @Test("a throwing observer does not stop the others, and its error is reported")
    func throwingObserver() throws {
        let failures = Recorder<String>()
        let store = try Store(id: storeID(), observerFailureHandler: { _, alert in failures.append(alert.id) })
        let thrower = store.observe(alice) { _ in throw ObserverFailed() }
        let after = RecordingObserver()
        let afterToken = store.observe(alice, with: after)
        let bobObserver = RecordingObserver()
        let bobToken = store.observe(bob, with: bobObserver)
        try store.subscribe(alice, to: iphone)
        try store.subscribe(bob, to: iphone)
        let alerts = try store.changeStock(of: iphone, .set(1)).alerts
        #expect(after.recorder.all.count == 1)
        #expect(bobObserver.recorder.all.count == 1)
        #expect(alerts.count == 2 && failures.all == alerts.filter { $0.customer == alice }.map(\.id))
        withExtendedLifetime((thrower, afterToken, bobToken)) {}
    }

    @Test("a closure registered with observeAll hears every customer's alert, after the customer's own observers, until its token is cancelled; what it throws goes to the failure handler (docs/embedding.md lists the closure form, which only StoreView had)")
    func observeAllClosure() throws {
        let failures = Recorder<String>()
        let store = try Store(id: storeID(), clock: { fixedDate }, observerFailureHandler: { _, alert in failures.append(alert.id) })
        let heard = Recorder<String>()
        let own = store.observe(alice) { alert in heard.append("alice's own: \(alert.id)") }
        let everyone = store.observeAll { alert in heard.append("everyone: \(alert.id)") }
        let thrower = store.observeAll { _ in throw ObserverFailed() }
        #expect(store.observerCount == 3)
        try store.subscribe(alice, to: iphone)
        try store.subscribe(bob, to: iphone)
        try store.changeStock(of: iphone, .set(1))
        #expect(heard.all == ["alice's own: apple-1", "everyone: apple-1", "everyone: apple-2"])
        #expect(failures.all == ["apple-1", "apple-2"])
        everyone.cancel()
        try store.subscribe(bob, to: iphone)
        #expect(heard.all.count == 3 && failures.all == ["apple-1", "apple-2", "apple-3"])
        withExtendedLifetime((own, thrower)) {}
    }

    @Test("a slow reader of an inbox holds up neither the store nor other observers")
    func slowInbox() async throws {
        let store = makeStore()
        let unread = store.alerts(for: alice)
        let bobObserver = RecordingObserver()
        let token = store.observe(bob, with: bobObserver)
        try store.subscribe(alice, to: iphone, mode: .every)
        try store.subscribe(bob, to: iphone, mode: .every)
        for _ in 0..<1_000 {
            try store.changeStock(of: iphone, .set(1))
            try store.changeStock(of: iphone, .set(0))
        }
        #expect(bobObserver.recorder.all.count == 1_000)
        // Nothing was lost while nobody read: all 1,000 are buffered, in order.
        let received = try await withDeadline(10, waitingFor: "1,000 buffered alerts") {
            var received: [RestockAlert] = []
            for await alert in unread {
                received.append(alert)
                if received.count == 1_000 { break }
            }
            return received
        }
        #expect(received.map(\.customer) == Array(repeating: alice, count: 1_000))
        let sequence = received.compactMap { $0.id.split(separator: "-").last.flatMap { Int($0) } }
        #expect(sequence.count == 1_000 && zip(sequence, sequence.dropFirst()).allSatisfy { $0 < $1 })
        token.cancel()
    }

    @Test("a customer's alerts come as an AsyncSequence")
    func inbox() async throws {
        let store = makeStore()
        let inbox = store.alerts(for: alice)
        try store.subscribe(alice, to: iphone)
        try store.subscribe(bob, to: iphone)
        try store.changeStock(of: iphone, .set(1))
        let first = try await withDeadline(10, waitingFor: "alice's alert") {
            var iterator = inbox.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(first?.customer == alice && first?.sku == iphone)
    }

    @Test("an inbox unregisters its observer when released")
    func inboxReleased() {
        let store = makeStore()
        do {
            let inbox = store.alerts(for: alice)
            #expect(store.observerCount(for: alice) == 1)
            withExtendedLifetime(inbox) {}
        }
        #expect(store.observerCount(for: alice) == 0)
    }
}
