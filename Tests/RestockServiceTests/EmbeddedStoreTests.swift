import Deadlines
import Foundation
import Logging
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Synchronization
import Testing

/// The store embedded in a program (docs/embedding.md): its local observer list follows what customers ask for through
/// the broker, in-process observers get each committed alert once, in order, off the pipeline, and stopping it by
/// cancelling its task says offline, as a graceful shutdown does.
@Suite("The embedded store's observer list, over a broker in memory")
struct EmbeddedStoreTests {
    @Test("the local list follows subscribes and unsubscribes made through the broker")
    func listFollowsTheBroker() async throws {
        let broker = InMemoryBroker()
        let running = try await StoreServiceTests.started(on: broker)
        let view: StoreView = running.service.store
        broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/alice")
        broker.publish(Array(#"{"sku":"ipad","mode":"every","minQuantity":2}"#.utf8), to: "restock/apple/subscribe/bob")
        try await waitUntil("both watches", within: 30) { view.watchers(of: sku("ipad")).count == 2 }
        #expect(view.watchers(of: sku("ipad")).map(\.customer) == [customer("alice"), customer("bob")])
        #expect(view.watch(customer("bob"), of: sku("ipad"))?.mode == .every)
        broker.publish(Array("ipad".utf8), to: "restock/apple/unsubscribe/alice")
        try await waitUntil("alice's watch gone", within: 30) { view.watchlist(of: customer("alice")).isEmpty }
        #expect(view.watchCount == 1)
        await running.stop()
    }

    @Test("in-process observers get each alert once, in signup order, after its batch is committed")
    func observersGetCommittedAlerts() async throws {
        let broker = InMemoryBroker()
        let running = try await StoreServiceTests.started(on: broker)
        let view = running.service.store
        let seen = Mutex<[(customer: String, position: UInt64, committed: Bool)]>([])
        guard case .memory(let volume) = running.storage else {
            Issue.record("the store is not on the memory backend")
            return
        }
        let everyone = view.observeAll { alert in
            // Committed: the alert's watch is already gone from the database (a once watch ends with its alert).
            let committed = volume.queueLengths().watches == 0
            seen.withLock { $0.append((alert.customer.rawValue, alert.position, committed)) }
        }
        for name in ["carol", "alice", "bob"] { broker.publish(Array("mac".utf8), to: "restock/apple/subscribe/\(name)") }
        try await waitUntil("three watches", within: 30) { view.watchers(of: sku("mac")).count == 3 }
        broker.publish(Array(#"{"sku":"mac","set":3}"#.utf8), to: "restock/apple/admin/stock")
        try await waitUntil("three alerts observed", within: 30) { seen.withLock { $0.count } == 3 }
        let alerts = seen.withLock { $0 }
        #expect(alerts.map(\.customer) == ["carol", "alice", "bob"])
        #expect(alerts.map(\.position) == alerts.map(\.position).sorted())
        #expect(alerts.allSatisfy { $0.committed })
        everyone.cancel()
        await running.stop()
    }

    @Test("an observer that throws or blocks does not stop the pipeline, nor the other observers")
    func failingObserverIsContained() async throws {
        let broker = InMemoryBroker()
        let running = try await StoreServiceTests.started(on: broker)
        let view = running.service.store
        struct Refused: Error {}
        let thrower = view.observe(customer("alice")) { _ in throw Refused() }
        let gate = Gate()
        let blocked = view.observe(customer("alice")) { _ in gate.pass() }
        let inbox = view.alerts(for: customer("alice"))
        broker.publish(Array(#"{"sku":"tv","mode":"every"}"#.utf8), to: "restock/apple/subscribe/alice")
        try await waitUntil("alice's watch", within: 30) { view.watch(customer("alice"), of: sku("tv")) != nil }
        broker.publish(Array(#"{"sku":"tv","set":1}"#.utf8), to: "restock/apple/admin/stock")
        broker.publish(Array(#"{"sku":"tv","set":0}"#.utf8), to: "restock/apple/admin/stock")
        broker.publish(Array(#"{"sku":"tv","set":2}"#.utf8), to: "restock/apple/admin/stock")
        // While an observer blocks the observers' queue, the store goes on: the broker gets both alerts.
        try await waitUntil("both alerts on the broker", within: 30) {
            broker.retainedMessage(on: "restock/apple/inventory/tv").map { String(decoding: $0.payload, as: UTF8.self).contains(#""quantity":2"#) } == true
        }
        #expect(view.quantity(of: sku("tv")) == 2)
        gate.open()
        var iterator = inbox.makeAsyncIterator()
        let first = await iterator.next(), second = await iterator.next()
        #expect([first?.quantity, second?.quantity] == [1, 2])
        #expect(running.log.text.contains("an in-process observer failed"))
        withExtendedLifetime((thrower, blocked)) {}
        await running.stop()
    }

    @Test("alerts past the bound of those waiting for observers are dropped for them and counted, not for the broker")
    func boundedObserverBacklog() async throws {
        let store = try Store(id: apple)
        let dropped = Mutex(0)
        let view = StoreView(of: store, maximumPending: 2, dropped: { count in dropped.withLock { $0 += count } })
        let gate = Gate()
        let received = Mutex<[UInt64?]>([])
        let token = view.observeAll { alert in
            gate.pass()
            received.withLock { $0.append(alert.sequence) }
        }
        for name in ["a", "b", "c", "d"] { try store.subscribe(customer(name), to: sku("mac")) }
        let outcome = try store.changeStock(of: sku("mac"), .set(4))
        view.deliverCommitted(Array(outcome.alerts.prefix(1)))
        view.deliverCommitted(Array(outcome.alerts.dropFirst()))
        #expect(dropped.withLock { $0 } == 2)
        gate.open()
        try await waitUntil("two alerts observed", within: 30) { received.withLock { $0.count } == 2 }
        #expect(received.withLock { $0 } == outcome.alerts.prefix(2).map { $0.sequence })
        token.cancel()
    }

    @Test("waitUntilOnline returns once the store is online, at once when it is, and throws once it has stopped")
    func waitUntilOnline() async throws {
        let broker = InMemoryBroker()
        broker.holdSubscriptionAnswers()
        let running = try RunningStore(on: broker)
        let waiter = Task { try await running.service.health.waitUntilOnline() }
        #expect(broker.status == nil)
        broker.releaseSubscriptionAnswers()
        try await waiter.value
        #expect(broker.status?.isOnline == true)
        try await running.service.health.waitUntilOnline()
        await running.stop()
        await #expect(throws: StoreNotOnline.self) { try await running.service.health.waitUntilOnline() }
    }

    @Test("a task waiting for the store to go online can be cancelled")
    func waitUntilOnlineCancelled() async throws {
        let health = StoreHealth()
        let waiter = Task { try await health.waitUntilOnline() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }

    @Test("an embedded store given a duration out of range is refused with one line, before anything is opened (was accepted)")
    func badDurations() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("never-\(UUID().uuidString)")
        func configuration(_ change: (inout StoreService.Configuration) -> Void) -> StoreService.Configuration {
            var configuration = StoreService.Configuration(connection: BrokerSettings(broker: .hostname("in-memory")), store: apple, dataDirectory: directory)
            change(&configuration)
            return configuration
        }
        let bad: [(String, StoreService.Configuration)] = [
            ("drainTimeout", configuration { $0.drainTimeout = .seconds(-5) }),
            ("watchLifetime", configuration { $0.watchLifetime = .zero }),
            ("watchLifetime", configuration { $0.watchLifetime = .seconds(-1) }),
            ("alertExpiry", configuration { $0.alertExpiry = .seconds(-1) }),
        ]
        for (setting, configuration) in bad {
            #expect {
                _ = try StoreService(configuration: configuration, logger: Logger(label: "test"), connector: InMemoryBroker(), timing: fast)
            } throws: { error in
                guard case RestockMQTTError.invalidSetting(let named, _) = error else { return false }
                return named == setting && !"\(error)".contains("\n")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path), "the data directory was made")
    }

    @Test("cancelling the task that runs the store publishes its offline status (the status stayed online before)")
    func cancellationSaysOffline() async throws {
        let broker = InMemoryBroker()
        let running = try await StoreServiceTests.started(on: broker)
        let instance = running.service.instance
        running.run.cancel()
        // 60 s, as every other stop here: under a full parallel test run its stages took up to 29 s to end (CPU-bound).
        _ = try await running.result(within: 60)
        let status = try #require(broker.status)
        #expect(status.state == .offline)
        #expect(status.instance == instance)
        #expect(status.reason == .stopped)
        // The next store of the id, on another data directory, goes online.
        let next = try await StoreServiceTests.started(on: broker)
        #expect(broker.status?.instance == next.service.instance)
        await next.stop()
    }
}

/// Holds the observers' queue until opened: what a slow observer does.
private final class Gate: Sendable {
    private let opened = Atomic<Bool>(false)
    private let semaphore = DispatchSemaphore(value: 0)

    /// Blocks until the gate is open (60 s at most, so that a failing test ends).
    func pass() {
        guard !opened.load(ordering: .acquiring) else { return }
        _ = semaphore.wait(timeout: .now() + 60)
        semaphore.signal()
    }

    func open() {
        opened.store(true, ordering: .releasing)
        semaphore.signal()
    }
}
