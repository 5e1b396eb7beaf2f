import Deadlines
import Foundation
import GRDB
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing

/// The store service over a broker in memory, with the contract's intervals a hundred times shorter: what the
/// integration tests show against a real mosquitto in seconds, here in milliseconds.
@Suite("The store service, over a broker in memory", .postgresServer)
struct StoreServiceTests {
    static func subscribe(_ customer: String, _ sku: String) -> (topic: String, payload: [UInt8]) {
        ("restock/apple/subscribe/\(customer)", Array(sku.utf8))
    }

    static func started(on broker: InMemoryBroker, storage: TestStorage = .memory(), drainTimeout: Duration = .seconds(5)) async throws -> RunningStore {
        let store = try RunningStore(on: broker, storage: storage, drainTimeout: drainTimeout)
        try await waitUntil("the store online", within: 60, pollEvery: .milliseconds(5)) { broker.status?.isOnline == true }
        return store
    }

    /// What a newer instance (`newer0000000`) does to `store`: it takes the store's session, and its heartbeat changes —
    /// a new one each ``fast``'s heartbeat — until `store` has stopped; then returns how `store`'s run ended.
    static func newerInstanceTakesOver(_ store: RunningStore, on broker: InMemoryBroker) async throws -> Result<Void, any Error> {
        let newer = try broker.connection(clientID: SessionClientIDs.store(apple), session: .persistent)
        try await newer.connect()
        try await waitUntil("the old store to stop", within: 60, pollEvery: fast.heartbeat) {
            let status = StoreStatus.online(store: apple, since: Date(), instance: "newer0000000", heartbeatAt: Date())
            broker.publish(status.payloadBytes(), to: appleTopics.status, retain: true)
            return store.hasEnded
        }
        withExtendedLifetime(newer) {}
        return try await store.result(within: 60)
    }

    /// A store started with a claim that settles for `settle`, once its claim is on the broker.
    static func claiming(on broker: InMemoryBroker, settlingFor settle: Duration) async throws -> RunningStore {
        var slowClaim = fast
        slowClaim.claimSettle = settle
        let store = try RunningStore(on: broker, timing: slowClaim)
        try await waitUntil("the store's claim", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: appleTopics.claim) != nil
        }
        return store
    }

    /// Until the store has committed `quantity` of `sku`.
    static func waitForStock(_ sku: String, _ quantity: Int, in store: RunningStore) async throws {
        let item = try SKU(sku)
        try await waitUntil("\(sku) at \(quantity), committed", within: 60, pollEvery: .milliseconds(5)) {
            (try? await store.storage.snapshot().inventory[item]) == quantity
        }
    }

    @Test("requests in, mirrors and alerts out; a graceful stop says offline", arguments: Engine.allCases)
    func requestsAndAlerts(on engine: Engine) async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker, storage: try await engine.storage())
        let alerts = try await Subscriber(broker, filter: "restock/apple/customers/+/alerts")
        broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/alice")
        try await waitUntil("alice's mirror", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: "restock/apple/customers/alice/subscriptions") != nil
        }
        broker.publish(Array(#"{"sku":"ipad","set":1}"#.utf8), to: "restock/apple/admin/stock")
        try await waitUntil("alice's alert", within: 60, pollEvery: .milliseconds(5)) { alerts.messages.count == 1 }
        try await store.stop().get()
        #expect(broker.status?.state == .offline && broker.status?.reason == .stopped)
    }

    @Test("a newer instance that takes the session and shows a changing heartbeat stops this one: it applies nothing more and says nothing")
    func takenOver() async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker)
        let result = try await Self.newerInstanceTakesOver(store, on: broker)
        guard case .failure(let error) = result, case RestockMQTTError.storeTakenOver(_, let winner) = error else {
            Issue.record("the store did not stop as taken over: \(result)")
            return
        }
        #expect(winner == "newer0000000")
        #expect(broker.status?.instance == "newer0000000", "the old instance said something over the winner's status")
        // A request now goes to the newer session, not to the old store.
        broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/late")
        #expect(try await store.queueLengths().inbox == 0)
        #expect(store.log.text.contains("took over"))
    }

    @Test("a store whose session was taken over sends nothing more of what it committed while it decides (found by an outside trial: a store frozen with its outbox full sent it on waking, over the newer store's retained inventory)")
    func outboxHeldWhileTakenOver() async throws {
        let broker = InMemoryBroker()
        var slowRead = fast
        slowRead.staleAfter = .seconds(10)  // a reading of the status may take the second the slow link below gives it
        let store = try RunningStore(on: broker, timing: slowRead)
        try await waitUntil("the store online", within: 60, pollEvery: .milliseconds(5)) { broker.status?.isOnline == true }
        let inventory = try await Subscriber(broker, filter: appleTopics.inventoryFilter)
        broker.publish(Self.subscribe("alice", "ipad").payload, to: Self.subscribe("alice", "ipad").topic)
        try await waitUntil("alice's watch, its mirror acknowledged", within: 60, pollEvery: .milliseconds(5)) {
            let queues = try? await store.queueLengths()
            return queues?.watches == 1 && queues?.outbox == 0
        }
        // The publisher waits for the acknowledgements of the first change while the second commits behind it.
        broker.holdAcknowledgements()
        broker.publish(Array(#"{"sku":"ipad","set":1}"#.utf8), to: "restock/apple/admin/stock")
        try await waitUntil("the first change sent", within: 60, pollEvery: .milliseconds(5)) {
            inventory.payloads(InventoryRecord.self, on: appleTopics.inventory(try SKU("ipad"))).contains { $0.quantity == 1 }
        }
        broker.publish(Array(#"{"sku":"ipad","set":7}"#.utf8), to: "restock/apple/admin/stock")
        try await Self.waitForStock("ipad", 7, in: store)
        // A newer instance takes the session; reading the status is slow, so the old store decides only once the
        // publisher has had the first change acknowledged, and could have sent the second.
        broker.holdSubscriptionAnswers()
        async let takeover = Self.newerInstanceTakesOver(store, on: broker)
        try await waitUntil("the old store's session lost", within: 60, pollEvery: .milliseconds(5)) {
            store.log.text.contains("session with the broker was lost")
        }
        broker.releaseAcknowledgements()
        try await waitUntil("the first change acknowledged", within: 60, pollEvery: .milliseconds(5)) {
            (try? await store.queueLengths().outbox).map { $0 <= 1 } ?? false
        }
        broker.releaseSubscriptionAnswers()
        let result = try await takeover
        guard case .failure(RestockMQTTError.storeTakenOver(_, let winner)) = result else {
            Issue.record("the store did not stop as taken over: \(result)")
            return
        }
        #expect(winner == "newer0000000")
        let sent = inventory.payloads(InventoryRecord.self, on: appleTopics.inventory(try SKU("ipad"))).map(\.quantity)
        #expect(sent == [1], "the old store published after the takeover: \(sent)")
    }

    @Test("what a request leads to waits until the broker confirms it took the request's acknowledgement: a store taken over before that sends none of it (found by an outside trial: through a frozen TCP relay, 2 runs in 20 published requests the newer store applied too)")
    func unconfirmedRequestsHeld() async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker)
        let inventory = try await Subscriber(broker, filter: appleTopics.inventoryFilter)
        // The partition: what the store writes back — the acknowledgement, the probe after it — never reaches the broker.
        broker.holdProbeAnswers(of: SessionClientIDs.store(apple))
        broker.publish(Array(#"{"sku":"ipad","set":7}"#.utf8), to: "restock/apple/admin/stock")
        try await Self.waitForStock("ipad", 7, in: store)
        #expect(broker.heldProbeCount(of: SessionClientIDs.store(apple)) == 1)
        let result = try await Self.newerInstanceTakesOver(store, on: broker)
        guard case .failure(RestockMQTTError.storeTakenOver) = result else {
            Issue.record("the store did not stop as taken over: \(result)")
            return
        }
        let sent = inventory.payloads(InventoryRecord.self, on: appleTopics.inventory(try SKU("ipad"))).map(\.quantity)
        #expect(sent.isEmpty, "the old store published what an unconfirmed request led to: \(sent)")
        #expect(store.log.text.contains("dropping 1 messages of requests the broker may have delivered to the newer instance too"))
        // It ends its publishing connection without DISCONNECT: its will follows everything it sent.
        #expect(broker.events.contains { $0.hasPrefix("dropped restock:apple:@") && $0.hasSuffix("abandoned") }, "\(broker.events)")
    }

    @Test("what an older instance sent late is overwritten once its connection ends: the live store publishes its retained topics again at the older one's will, and answers it with its status (found by an outside trial: an old store's inventory, held by a frozen relay, landed after the newer store's and stayed)")
    func healsAfterAnOlderInstancesWill() async throws {
        let broker = InMemoryBroker()
        // What an older instance left: its status and its claim, read by the new store at its start.
        broker.publish(StoreStatus.connectionLost(store: apple, instance: "older0000000").payloadBytes(), to: appleTopics.status, retain: true)
        let store = try await Self.started(on: broker)
        broker.publish(Array(#"{"sku":"ipad","set":5}"#.utf8), to: "restock/apple/admin/stock")
        let ipad = appleTopics.inventory(try SKU("ipad"))
        @Sendable func retained() -> Int? {
            broker.retainedMessage(on: ipad).flatMap { try? JSONDecoder().decode(InventoryRecord.self, from: Data($0.payload)).quantity }
        }
        try await waitUntil("ipad at 5 on the broker", within: 60, pollEvery: .milliseconds(5)) { retained() == 5 }
        // The older instance's late bytes: its stale inventory, a heartbeat, then its will as its connection ends.
        broker.publish(InventoryRecord(store: apple, sku: try SKU("ipad"), quantity: 1, updatedAt: Date()).payloadBytes(), to: ipad, retain: true)
        let beat = StoreStatus.online(store: apple, since: Date(), instance: "older0000000", heartbeatAt: Date())
        broker.publish(beat.payloadBytes(), to: appleTopics.status, retain: true)
        broker.publish(StoreStatus.connectionLost(store: apple, instance: "older0000000").payloadBytes(), to: appleTopics.status, retain: true)
        try await waitUntil("ipad back at 5 and the store online", within: 60, pollEvery: .milliseconds(5)) {
            retained() == 5 && broker.status?.isOnline == true && broker.status?.instance == store.service.instance
        }
        #expect(store.log.text.contains("another instance's connection ended: publishing every retained topic again"))
        await store.stop()
    }

    @Test("held messages go out once the store, having lost its session with their confirmation, finds that no newer instance took it")
    func heldReleasedAfterLoss() async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker)
        let inventory = try await Subscriber(broker, filter: appleTopics.inventoryFilter)
        let session = SessionClientIDs.store(apple)
        broker.holdProbeAnswers(of: session)
        broker.publish(Array(#"{"sku":"ipad","set":3}"#.utf8), to: "restock/apple/admin/stock")
        try await Self.waitForStock("ipad", 3, in: store)
        #expect(try await store.queueLengths().outbox == 1, "committed, held")
        // The session's connection ends (another connection of its client id, gone at once): the probe is never answered.
        let intruder = try broker.connection(clientID: session, session: .persistent)
        _ = try await intruder.connect()
        await intruder.disconnect()
        broker.releaseProbeAnswers(of: session)
        try await waitUntil("the held inventory published", within: 60, pollEvery: .milliseconds(5)) {
            inventory.payloads(InventoryRecord.self, on: appleTopics.inventory(try SKU("ipad"))).map(\.quantity) == [3]
        }
        #expect(store.log.text.contains("publishing 1 messages held until the broker confirmed their requests"))
        // Later requests are confirmed as usual.
        broker.publish(Array(#"{"sku":"ipad","set":4}"#.utf8), to: "restock/apple/admin/stock")
        try await waitUntil("the next change published", within: 60, pollEvery: .milliseconds(5)) {
            inventory.payloads(InventoryRecord.self, on: appleTopics.inventory(try SKU("ipad"))).map(\.quantity) == [3, 4]
        }
        await store.stop()
    }

    @Test("another store of the id is refused while this one is live, and takes no request")
    func secondRefused() async throws {
        let broker = InMemoryBroker()
        let first = try await Self.started(on: broker)
        let second = try RunningStore(on: broker)
        let result = try await second.result(within: 60)
        guard case .failure(RestockMQTTError.storeAlreadyRunning(_, let instance)) = result else {
            Issue.record("the second store was not refused: \(result)")
            return
        }
        #expect(instance == first.service.instance)
        #expect(broker.status?.instance == first.service.instance)
        await first.stop()
    }

    @Test("a store stopped between its claim and going online withdraws its claim: another starts at once")
    func stoppedDuringClaim() async throws {
        let broker = InMemoryBroker()
        // The stop always lands while it waits after its claim.
        let first = try await Self.claiming(on: broker, settlingFor: .seconds(30))
        try await first.stop().get()
        #expect(first.log.text.contains("stopped before it was online"), "\(first.log.text)")
        #expect(broker.retainedMessage(on: appleTopics.claim) == nil, "the claim was left behind")
        let second = try await Self.started(on: broker)
        #expect(broker.status?.instance == second.service.instance)
        await second.stop()
    }

    @Test("a store that stops cleanly withdraws its claim: a start right after, once a start killed early has put its will over the status, is not refused (found by an outside trial: refused for 6 s, naming the stopped store)")
    func cleanStopWithdrawsTheClaim() async throws {
        let broker = InMemoryBroker()
        let first = try await Self.started(on: broker)
        #expect(broker.retainedMessage(on: appleTopics.claim) != nil)
        try await first.stop().get()
        #expect(broker.retainedMessage(on: appleTopics.claim) == nil, "the claim was left behind")
        // A start killed before its claim: its will says it lost its connection, over the first one's "stopped".
        broker.publish(StoreStatus.connectionLost(store: apple, instance: "bbbbbbbbbbbb").payloadBytes(), to: appleTopics.status, retain: true)
        let third = try await Self.started(on: broker)
        #expect(broker.status?.instance == third.service.instance)
        await third.stop()
    }

    @Test("requests with an invalid customer id, or on an unexpected topic, are logged at most once a minute, with how many were left unsaid (found by an outside trial: 5,000 such requests wrote 5,000 warnings)")
    func clientCausedWarningsThrottled() async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker)
        for index in 0..<200 { broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/bad!id\(index)") }
        // Applied in order: once alice's mirror is out, every request before it was applied.
        broker.publish(Self.subscribe("alice", "ipad").payload, to: Self.subscribe("alice", "ipad").topic)
        try await waitUntil("alice's mirror", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: "restock/apple/customers/alice/subscriptions") != nil
        }
        let lines = store.log.text.split(separator: "\n").filter { $0.contains("refused a request with an invalid customer id") }
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("said at most once a minute") == true)
        await store.stop()
    }

    @Test("a start frozen between its claim and its check reads the claim again first: a newer claim waiting in its socket refuses it (found by an outside trial: 1 start in 3 went online beside the newer store)")
    func frozenClaimCheckReadsAgain() async throws {
        let broker = InMemoryBroker()
        // The freeze always lands while it waits after its claim, also on a loaded machine.
        let first = try await Self.claiming(on: broker, settlingFor: .seconds(10))
        #expect(broker.status?.isOnline != true, "the store was online before the freeze")
        broker.holdDeliveries(to: SessionClientIDs.publisher(of: apple, instance: first.service.instance))
        let newer = StoreClaim(store: apple, instance: "bbbbbbbbbbbb", at: Date())
        broker.publish(newer.payloadBytes(), to: appleTopics.claim, retain: true)
        let result = try await first.result(within: 60)
        guard case .failure(RestockMQTTError.storeAlreadyRunning(_, let instance)) = result else {
            Issue.record("the frozen start was not refused: \(result)")
            return
        }
        #expect(instance == newer.instance)
        #expect(broker.status?.isOnline != true, "the refused start said online")
        #expect(broker.retainedMessage(on: appleTopics.claim)?.payload == newer.payloadBytes(), "the newer claim was withdrawn")
    }

    @Test("a graceful stop drains the outbox while the broker holds its acknowledgements, then says offline", arguments: Engine.allCases)
    func drains(on engine: Engine) async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker, storage: try await engine.storage())
        let alerts = try await Subscriber(broker, filter: "restock/apple/customers/+/alerts")
        let customers = (0..<300).map { "c\($0)" }
        for customer in customers { broker.publish(Self.subscribe(customer, "ipad").payload, to: Self.subscribe(customer, "ipad").topic) }
        try await waitUntil("300 watches, their mirrors acknowledged", within: 60, pollEvery: .milliseconds(5)) {
            let queues = try? await store.queueLengths()
            return queues?.watches == 300 && queues?.outbox == 0
        }
        // The broker holds every acknowledgement from now on: the publisher waits for zed's mirror's, having found
        // nothing more to send, while the restock commits behind it (a pass that ended on what was pending before must
        // not end the drain).
        broker.holdAcknowledgements()
        broker.publish(Self.subscribe("zed", "mac").payload, to: Self.subscribe("zed", "mac").topic)
        try await waitUntil("zed's mirror published", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: "restock/apple/customers/zed/subscriptions") != nil
        }
        broker.publish(Array(#"{"sku":"ipad","set":1}"#.utf8), to: "restock/apple/admin/stock")
        try await Self.waitForStock("ipad", 1, in: store)
        let stopping = Task { await store.stop() }
        // The drain has begun once the session is closed (no request is taken any more): then the broker acknowledges.
        try await waitUntil("the store to close its session and drain", within: 60, pollEvery: .milliseconds(1)) {
            broker.events.contains("dropped \(SessionClientIDs.store(apple)): disconnected")
        }
        broker.releaseAcknowledgements()
        try await stopping.value.get()
        #expect(Set(alerts.messages.map(\.topic)).count == 300)
        #expect(try await store.queueLengths().outbox == 0)
        #expect(broker.status?.reason == .stopped)
        #expect(store.log.text.contains("the outbox is empty"))
    }

    @Test("a store whose session is lost while it starts, before its subscriptions are made, goes online once the broker is back (found by the outside trial: it tried connect() again for good, and never stopped)")
    func sessionLostWhileStarting() async throws {
        let broker = InMemoryBroker()
        let session = SessionClientIDs.store(try StoreID("apple"))
        broker.holdSubscriptionAnswers(of: session)
        let store = try RunningStore(on: broker)
        try await waitUntil("the store's session connected", within: 60, pollEvery: .milliseconds(1)) {
            broker.events.contains { $0.hasPrefix("connected \(session) ") }
        }
        broker.stop()
        broker.start()
        broker.releaseSubscriptionAnswers()
        try await waitUntil("the store online", within: 60, pollEvery: .milliseconds(5)) { broker.status?.isOnline == true }
        broker.publish(Self.subscribe("alice", "ipad").payload, to: Self.subscribe("alice", "ipad").topic)
        try await waitUntil("alice's watch", within: 60, pollEvery: .milliseconds(5)) {
            (try? await store.queueLengths().watches) == 1
        }
        #expect(!store.log.text.contains("misuse"), "\(store.log.text.suffix(800))")
        try await store.stop().get()
    }

    @Test("a graceful stop with a broker that never acknowledges ends within the drain timeout and its grace, and keeps what is left")
    func drainBounded() async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker, drainTimeout: .milliseconds(50))
        broker.publish(Self.subscribe("alice", "ipad").payload, to: Self.subscribe("alice", "ipad").topic)
        try await waitUntil("alice's watch", within: 60, pollEvery: .milliseconds(5)) {
            (try? await store.queueLengths().watches) == 1
        }
        broker.holdAcknowledgements()
        broker.publish(Array(#"{"sku":"ipad","set":1}"#.utf8), to: "restock/apple/admin/stock")
        try await Self.waitForStock("ipad", 1, in: store)
        let clock = ContinuousClock()
        let took = await clock.measure { _ = await store.stop() }
        // Bounded, not timed: a drain that waited for the held acknowledgements would never end. (50 ms of drain and
        // 20 ms of grace; the bound leaves room for a loaded machine.)
        #expect(took < .seconds(60), "the stop took \(took): the drain is 50 ms and the grace 20 ms")
        #expect(store.log.text.contains("left in the outbox"), "\(store.log.text)")
        broker.releaseAcknowledgements()
    }

    /// Starts a store on `storage` whose customer alice watches the ipad (and each of `others` their SKU), sets the
    /// ipad's stock to 1 with the broker acknowledging nothing, and stops it: alice's alert stays in the outbox, the
    /// broker's acknowledgements still held.
    static func stoppedWithAliceAlertInTheOutbox(
        on broker: InMemoryBroker, storage: TestStorage, alsoWatching others: [(customer: String, sku: String)] = []
    ) async throws {
        let first = try await started(on: broker, storage: storage, drainTimeout: .milliseconds(50))
        for (customer, sku) in [("alice", "ipad")] + others {
            broker.publish(subscribe(customer, sku).payload, to: subscribe(customer, sku).topic)
        }
        try await waitUntil("every watch", within: 60, pollEvery: .milliseconds(5)) { (try? await first.queueLengths().watches) == others.count + 1 }
        broker.holdAcknowledgements()
        broker.publish(Array(#"{"sku":"ipad","set":1}"#.utf8), to: "restock/apple/admin/stock")
        try await waitForStock("ipad", 1, in: first)
        await first.stop()
    }

    @Test("a store started again on the same state finds its watches, its stock and what its outbox kept", arguments: Engine.allCases)
    func restartOnTheSameState(on engine: Engine) async throws {
        let broker = InMemoryBroker()
        let storage = try await engine.storage()
        try await Self.stoppedWithAliceAlertInTheOutbox(on: broker, storage: storage, alsoWatching: [("bob", "mac")])
        if case .memory(let volume) = storage { #expect(volume.lease.owner.isEmpty, "the lease was released") }
        #expect(try await storage.queueLengths().outbox > 0, "nothing was left in the outbox")
        broker.releaseAcknowledgements()
        let alerts = try await Subscriber(broker, filter: "restock/apple/customers/+/alerts")
        let second = try await Self.started(on: broker, storage: storage)
        if case .memory(let volume) = storage { #expect(volume.lease.epoch == 2) }
        #expect(second.service.store.watchCount == 1, "bob's watch is restored; alice's once watch ended with its alert")
        #expect(try await storage.snapshot().inventory[try SKU("ipad")] == 1)
        try await waitUntil("alice's alert, sent by the second store", within: 60, pollEvery: .milliseconds(5)) {
            !alerts.payloads(RestockAlert.self, on: "restock/apple/customers/alice/alerts").isEmpty
        }
        await second.stop()
    }

    @Test("a stage that fails for good stops the store: it drains, says offline, and ends with the stage and the cause")
    func stageFailure() async throws {
        let broker = InMemoryBroker()
        // On SQLite: a second connection changes its file while it runs.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("service-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await Self.started(on: broker, storage: .sqlite(directory))
        // From now on the state refuses to queue boom's mirror, and so to commit the batch that makes it (a trigger
        // added by a second connection while the store runs).
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let queue = try DatabaseQueue(path: store.dataDirectory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse_boom BEFORE INSERT ON outbox WHEN NEW.topic = 'restock/apple/customers/boom/subscriptions'
                    BEGIN SELECT RAISE(ABORT, 'the disk refuses boom'); END;
                    """)
        }
        try queue.close()
        broker.publish(Self.subscribe("boom", "ipad").payload, to: Self.subscribe("boom", "ipad").topic)
        let result = try await store.result(within: 60)
        guard case .failure(let error) = result else {
            Issue.record("the store went on")
            return
        }
        #expect("\(error)".contains("applying requests failed") && "\(error)".contains("the disk refuses boom"), "\(error)")
        #expect(broker.status?.isOnline == false)
    }

    @Test("a broker restarted without persistence gets the status, the mirrors and the inventory back", arguments: Engine.allCases)
    func brokerLostEverything(on engine: Engine) async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker, storage: try await engine.storage())
        broker.publish(Self.subscribe("alice", "ipad").payload, to: Self.subscribe("alice", "ipad").topic)
        broker.publish(Array(#"{"sku":"pencil","set":7}"#.utf8), to: "restock/apple/admin/stock")
        try await waitUntil("alice's mirror and the pencil", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: "restock/apple/customers/alice/subscriptions") != nil
                && broker.retainedMessage(on: "restock/apple/inventory/pencil") != nil
        }
        broker.stop(persistence: false)
        #expect(broker.status == nil)
        broker.start()
        try await waitUntil("every retained topic back", within: 60, pollEvery: .milliseconds(5)) {
            broker.status?.isOnline == true && broker.retainedMessage(on: "restock/apple/customers/alice/subscriptions") != nil
                && broker.retainedMessage(on: "restock/apple/inventory/pencil") != nil
        }
        #expect(store.log.text.contains("reconnected to the broker"))
        await store.stop()
    }

    @Test("a publishing connection made again while the session's socket is dead, unnoticed (a broker restarted while the store was frozen), carries no online status until the session answers (found in CI: a client sent its request on such a status, and it was lost)")
    func noBeatUntilTheSessionAnswers() async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker)
        let session = SessionClientIDs.store(apple)
        let publisher = SessionClientIDs.publisher(of: apple, instance: try #require(broker.status?.instance))
        broker.holdUnsubscribeAnswers(of: session)
        broker.publish([], to: appleTopics.status, retain: true)
        let connections = broker.events.count { $0.hasPrefix("connected \(publisher) ") }
        broker.dropConnection(of: publisher)
        // Beats come every 50 ms: each over the new connection first asks the session, which does not answer.
        try await waitUntil("two beats held back, or one said online", within: 60, pollEvery: .milliseconds(5)) {
            broker.status != nil || broker.heldUnsubscribeCount(of: session) >= 2
        }
        #expect(broker.events.count { $0.hasPrefix("connected \(publisher) ") } == connections + 1, "the publishing connection came back")
        #expect(broker.status == nil, "an online status over a publishing connection made again before the session answered")
        broker.releaseUnsubscribeAnswers(of: session)
        try await waitUntil("the store online again", within: 60, pollEvery: .milliseconds(5)) { broker.status?.isOnline == true }
        await store.stop()
    }

    @Test("an outbox that cannot be read for a while (its disk or database away for a moment) is read again once it can: the store goes on and sends what it kept (found in CI: a store whose database stopped as it came online read its outbox then, and exited)")
    func outboxReadRetried() async throws {
        let broker = InMemoryBroker()
        let volume = InMemoryVolume()
        try await Self.stoppedWithAliceAlertInTheOutbox(on: broker, storage: .memory(volume))
        #expect(volume.queueLengths().outbox > 0, "nothing was left in the outbox")
        broker.releaseAcknowledgements()
        // The next store's first reads of its outbox fail, as they do when its database stops as the store comes online.
        volume.refuseOutboxReads(3)
        let alerts = try await Subscriber(broker, filter: "restock/apple/customers/+/alerts")
        let second = try await Self.started(on: broker, storage: .memory(volume))
        do {
            try await waitUntil("alice's alert, sent once the outbox could be read", within: 60, pollEvery: .milliseconds(5)) {
                !alerts.payloads(RestockAlert.self, on: "restock/apple/customers/alice/alerts").isEmpty || second.hasEnded
            }
        } catch {
            Issue.record("\(error); the store's log ends: \(second.log.text.suffix(2_000))")
            throw error
        }
        let ended = second.hasEnded ? try await second.result(within: 1) : nil
        #expect(!second.hasEnded, "the store ended: \(String(describing: ended))")
        guard !second.hasEnded else { return }
        #expect(second.log.text.contains("cannot read the outbox now"), "\(second.log.text.suffix(1_500))")
        #expect(second.log.text.contains("read the outbox again"), "\(second.log.text.suffix(1_500))")
        try await waitUntil("the outbox empty", within: 60, pollEvery: .milliseconds(10)) { (try? await second.queueLengths().outbox) == 0 }
        try await second.stop().get()
    }

    @Test("a batch's commit made but answered with an error (an answer lost with PostgreSQL's connection) is tried again and counted once: its alert is sent once, and the report counts it once (found by an outside trial: twice)")
    func commitAnswerLost() async throws {
        let broker = InMemoryBroker()
        let volume = InMemoryVolume()
        let store = try await Self.started(on: broker, storage: .memory(volume))
        let alerts = try await Subscriber(broker, filter: "restock/apple/customers/+/alerts")
        broker.publish(Array(#"{"sku":"ipad","mode":"every"}"#.utf8), to: "restock/apple/subscribe/alice")
        try await waitUntil("alice's watch", within: 60, pollEvery: .milliseconds(5)) { volume.queueLengths().watches == 1 }
        volume.loseCommitAnswers(1)
        broker.publish(Array(#"{"sku":"ipad","set":1}"#.utf8), to: "restock/apple/admin/stock")
        do {
            try await waitUntil("alice's alert", within: 60, pollEvery: .milliseconds(5)) {
                !alerts.payloads(RestockAlert.self, on: "restock/apple/customers/alice/alerts").isEmpty || store.hasEnded
            }
            try await waitUntil("the outbox empty", within: 60, pollEvery: .milliseconds(5)) { volume.queueLengths().outbox == 0 }
        } catch {
            Issue.record("\(error); the store's log ends: \(store.log.text.suffix(1_500))")
            throw error
        }
        #expect(!store.hasEnded, "\(store.log.text.suffix(1_500))")
        let report = volume.report(at: Date())
        #expect(report.alertsRaised.life == 1, "\(report)")
        #expect(Set(alerts.payloads(RestockAlert.self, on: "restock/apple/customers/alice/alerts").map(\.id)).count == 1)
        try await store.stop().get()
    }

    @Test("a store whose journal cannot be written as it takes its session (its database stopped then) comes online once it can, and applies what waited in its session (found by an outside trial: it never came online, and logged \"broker not reachable\" twice a second)")
    func journalPausedAtStart() async throws {
        let broker = InMemoryBroker()
        let volume = InMemoryVolume()
        // A first run makes the store's session on the broker; a subscribe waits in it while the store is down.
        let first = try await Self.started(on: broker, storage: .memory(volume))
        await first.stop()
        broker.publish(Self.subscribe("alice", "ipad").payload, to: Self.subscribe("alice", "ipad").topic)
        volume.refuseJournalWrites(true)
        let second = try RunningStore(on: broker, storage: .memory(volume))
        try await waitUntil("the journal paused", within: 60, pollEvery: .milliseconds(5)) {
            second.log.text.contains("paused journaling requests") || second.hasEnded
        }
        volume.refuseJournalWrites(false)
        do {
            try await waitUntil("the store online, with alice's watch", within: 60, pollEvery: .milliseconds(5)) {
                (broker.status?.isOnline == true && volume.queueLengths().watches == 1) || second.hasEnded
            }
        } catch {
            Issue.record("\(error); the store's log ends: \(second.log.text.suffix(1_500))")
            throw error
        }
        #expect(!second.hasEnded, "\(second.log.text.suffix(1_500))")
        #expect(second.log.text.contains("resumed journaling requests"), "\(second.log.text.suffix(1_500))")
        try await second.stop().get()
    }

    @Test("requests sent while the broker is away from the store wait in its session and are applied when it is back", arguments: Engine.allCases)
    func requestsWaitInTheSession(on engine: Engine) async throws {
        let broker = InMemoryBroker()
        let store = try await Self.started(on: broker, storage: try await engine.storage())
        broker.stop()
        // The store's session keeps what is published for it meanwhile (a client on another node, say).
        broker.start()
        for customer in ["a", "b", "c"] { broker.publish(Self.subscribe(customer, "ipad").payload, to: Self.subscribe(customer, "ipad").topic) }
        try await waitUntil("3 watches", within: 60, pollEvery: .milliseconds(5)) {
            (try? await store.queueLengths().watches) == 3
        }
        await store.stop()
    }
}

/// The store's clients over a broker in memory.
@Suite("The store's client, over a broker in memory")
struct StoreClientTests {
    @Test("a live store is found over a slow link: the wait for the retained status counts from the broker's answer, not the request (found by the outside trial: 10 of 10 refused as never online at 300 ms)")
    func slowLinkFindsTheStore() async throws {
        let broker = InMemoryBroker()
        let store = try await StoreServiceTests.started(on: broker)
        broker.holdSubscriptionAnswers()
        let client = StoreClient(connection: BrokerSettings(broker: .hostname("in-memory")), topics: appleTopics, connector: broker)
        // The wait bounds a failure only: a few seconds on an idle machine, more with the whole suite on two cores.
        async let change = client.changeStock(of: try SKU("pencil"), .set(3), wait: 60)
        // The link answers the client's subscription 700 ms late: longer than the client waits for retained messages.
        try await waitUntil("the client's subscription answer held 700 ms", within: 60, pollEvery: .milliseconds(10)) {
            (broker.subscriptionAnswerHeldFor ?? .zero) >= .milliseconds(700)
        }
        broker.releaseSubscriptionAnswers()
        let record = try await change
        #expect(record.quantity == 3)
        await store.stop()
    }

    @Test("a store the broker has never seen is refused at once; a paused or offline one is not taken for live")
    func unknownStoreRefused() async throws {
        let broker = InMemoryBroker()
        let nowhere = StoreClient(
            connection: BrokerSettings(broker: .hostname("in-memory")), topics: try RestockTopics(store: StoreID("nowhere")), connector: broker)
        await #expect(throws: RestockMQTTError.unknownStore(store: "nowhere")) {
            try await nowhere.changeStock(of: try SKU("x"), .set(1), wait: 10)
        }
        // An online status whose heartbeat never changes (its store is gone) is waited on, then said offline.
        let stale = StoreStatus.online(store: apple, since: Date(timeIntervalSinceNow: -3_600), instance: "aaaaaaaaaaaa", heartbeatAt: Date(timeIntervalSinceNow: -3_600))
        broker.publish(stale.payloadBytes(), to: appleTopics.status, retain: true)
        let client = StoreClient(connection: BrokerSettings(broker: .hostname("in-memory")), topics: appleTopics, connector: broker)
        await #expect(throws: RestockMQTTError.storeOffline(store: "apple")) {
            try await client.changeStock(of: try SKU("x"), .set(1), wait: 1)
        }
    }
}

/// Alert ids stay unique across the store's lives (found by the outside trial: after a restore from a backup, or
/// with the data removed, ids were handed out again, and consumers dropped the new alerts as seen).
@Suite("Alert ids across restarts, restores and removed data")
struct AlertIDTests {
    func alertIDs(_ broker: InMemoryBroker, data: URL, restock quantity: Int) async throws -> [String] {
        let alerts = try await Subscriber(broker, filter: "restock/apple/customers/+/alerts")
        let store = try RunningStore(on: broker, storage: .sqlite(data))
        try await waitUntil("the store online", within: 60, pollEvery: .milliseconds(5)) {
            broker.status?.isOnline == true && broker.status?.instance == store.service.instance
        }
        broker.publish(Array(#"{"sku":"ipad","mode":"every"}"#.utf8), to: "restock/apple/subscribe/alice")
        broker.publish(Array(#"{"sku":"ipad","set":0}"#.utf8), to: "restock/apple/admin/stock")
        broker.publish(Array(#"{"sku":"ipad","set":\#(quantity)}"#.utf8), to: "restock/apple/admin/stock")
        try await waitUntil("alice's alert", within: 60, pollEvery: .milliseconds(5)) { !alerts.messages.isEmpty }
        try await store.stop().get()
        return alerts.payloads(RestockAlert.self, on: "restock/apple/customers/alice/alerts").map(\.id)
    }

    @Test("a store started again on removed data, or on a backup of its data, never hands out an alert id it gave before")
    func idsNeverReused() async throws {
        let broker = InMemoryBroker()
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("ids-\(UUID().uuidString)")
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("ids-backup-\(UUID().uuidString)")
        defer { for url in [data, backup] { try? FileManager.default.removeItem(at: url) } }
        var seen = try await alertIDs(broker, data: data, restock: 1)
        try FileManager.default.copyItem(at: data, to: backup)
        seen += try await alertIDs(broker, data: data, restock: 2)
        // Both files back from the backup, as docs/operations.md says.
        try FileManager.default.removeItem(at: data)
        try FileManager.default.copyItem(at: backup, to: data)
        seen += try await alertIDs(broker, data: data, restock: 3)
        // The data removed, as the refusal of a damaged directory allows.
        try FileManager.default.removeItem(at: data)
        seen += try await alertIDs(broker, data: data, restock: 4)
        #expect(seen.count == 4 && Set(seen).count == 4, "ids handed out again: \(seen)")
    }
}
