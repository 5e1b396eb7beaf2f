import RestockPipeline
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing
import Deadlines

/// One live store per store id on a broker: a second instance refuses to start, a store whose session is
/// taken stops rather than fights, and a standby on the same data directory takes over when the live one dies.
@Suite("One store per store id", .timeLimit(.minutes(3)))
struct OneStoreTests {
    @Test("a second store with the same id, on another data directory, refuses to start with one line")
    func secondInstanceRefused() async throws {
        let broker = try await MosquittoBroker.start()
        let first = try await StoreProcess.started(on: broker)
        let second = try StoreProcess(broker: broker)
        let child = try second.launch()
        try await waitUntil("the second store to exit", within: 30) { child.exitStatus != nil }
        #expect(child.exitStatus != 0)
        let errors = second.log.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(errors.count == 1 && errors.first?.contains("store apple is already running on this broker (instance ") == true, "\(second.log)")
        #expect(errors.first?.contains("restock serve --standby") == true)
        // Its data directory was there and empty: it is left so (it was left holding a whole empty store: an outside trial).
        #expect(try FileManager.default.contentsOfDirectory(atPath: second.dataDirectory.path).isEmpty, "the second store left files")
        #expect(first.exitStatus == nil)
        // A data directory the refused start made is not left behind (it left a whole empty store: an outside trial).
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        for fresh in [parent.appendingPathComponent("fresh"), parent.appendingPathComponent("new/sub/deep")] {
            let third = try await ChildProcess.run(restockExecutable, ["serve", "--broker", broker.url, "--data", fresh.path], within: 60)
            #expect(third.status != 0 && third.standardError.contains("store apple is already running on this broker"), "\(third.standardError)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty, "the refused start left \(fresh.path) or its parents")
        }
        // What a directory held before is kept, and what the start made beside it goes (it stayed: an outside trial).
        let kept = parent.appendingPathComponent("kept")
        try FileManager.default.createDirectory(at: kept, withIntermediateDirectories: false)
        try Data("mine".utf8).write(to: kept.appendingPathComponent("notes.txt"))
        _ = try await ChildProcess.run(restockExecutable, ["serve", "--broker", broker.url, "--data", kept.path], within: 60)
        #expect(try FileManager.default.contentsOfDirectory(atPath: kept.path) == ["notes.txt"], "what the refused start made is left")
        try await first.send(SIGTERM)
    }

    @Test("stores of one id under two topic prefixes are two stores: each keeps its own session and applies its own requests (found by the outside trial: they fought over one session and lost acknowledged requests)")
    func prefixesAreSeparateStores() async throws {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let staging = try StoreProcess(broker: broker, extraArguments: ["--prefix", "staging"])
        try staging.launch()
        let stagingClient = StoreClient(connection: try BrokerSettings(url: broker.url), topics: try RestockTopics(prefix: "staging", store: StoreID("apple")))
        try await waitUntil("the staging store online", within: 60) { (try? await stagingClient.status())?.isOnline == true }
        for index in 0..<100 {
            try await mosquittoPub(broker, "restock/apple/subscribe/c\(index)", "ipad")
            try await mosquittoPub(broker, "staging/apple/subscribe/s\(index)", "ipad")
        }
        try await StoreQueues.waitForWatches(100, in: live.dataDirectory, within: 60)
        try await StoreQueues.waitForWatches(100, in: staging.dataDirectory, within: 60)
        #expect(live.exitStatus == nil && staging.exitStatus == nil)
        #expect(!broker.log.contains("already connected, closing old connection"), "the stores took each other's session")
        #expect(staging.log.contains("staging:apple") || broker.log.contains("as staging:apple"), "\(broker.log.suffix(600))")
        try await staging.send(SIGTERM)
        try await live.send(SIGTERM)
    }

    @Test("stores started at the same moment on other data directories: one goes on, the others refuse before taking a request", arguments: 1...3)
    func simultaneousStarts(round: Int) async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        // The store's session exists (a store ran and stopped), so requests sent while they start are queued in it.
        let before = try await StoreProcess.started(on: broker)
        try await before.send(SIGTERM)
        let stores = try (0..<3).map { _ in try StoreProcess(broker: broker) }
        let children = try stores.map { try $0.launch() }
        for index in 0..<40 { try await mosquittoPub(broker, "restock/apple/subscribe/c\(index)", "ipad") }
        try await waitUntil("all but one store to exit", within: 30) { children.filter { $0.exitStatus != nil }.count == 2 }
        let running = stores.indices.filter { children[$0].exitStatus == nil }
        #expect(running.count == 1, "round \(round): \(stores.map { $0.log.suffix(300) })")
        for index in stores.indices where !running.contains(index) {
            #expect(children[index].exitStatus != 0)
            #expect(stores[index].log.contains("is already running on this broker"), "\(stores[index].log.suffix(400))")
            // The losers never took the store's session, and kept nothing: their data directories are empty again.
            #expect(try FileManager.default.contentsOfDirectory(atPath: stores[index].dataDirectory.path).isEmpty, "a loser left files")
        }
        // Every request reaches the one that runs.
        guard let winner = running.first else { return }
        try await waitUntil("40 watches at the winner", within: 30) {
            (try? StoreDatabase.queueLengths(readingOnly: stores[winner].dataDirectory).watches) == 40
        }
        try await stores[winner].send(SIGTERM)
    }

    @Test("an instance that was paused while another took over comes back: it stops before taking the session back, and applies nothing")
    func pausedInstanceComesBack() async throws {
        let broker = try await MosquittoBroker.start()
        let old = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        // Frozen until stale, a newer store takes the session, then it wakes mid-stream of stock changes.
        let newer = try StoreProcess(broker: broker)
        let (sent, _) = try await old.wakeAfterTakeover(by: newer, sku: "cnt")
        try await expectTakenOver(old, sku: "cnt", sent: sent, client: client)
        try await newer.send(SIGTERM)
    }

    @Test("an instance frozen while another took over, whose own heartbeat reaches the broker late and overwrites the newer one's status, stops when it wakes: it does not take the session back (issue 22: R7d and R7e)")
    func lateOwnHeartbeatDoesNotWin() async throws {
        let broker = try await MosquittoBroker.start()
        let old = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let oldInstance = try #require(try await client.status()?.instance)
        let newer = try StoreProcess(broker: broker)
        // What a partition or a frozen process does: heartbeats the old instance sent before it knew reach the broker
        // after the newer one went online, and the retained status is the old one's again as it wakes.
        let (sent, _) = try await old.wakeAfterTakeover(by: newer, sku: "late", beforeWaking: {
            let late = StoreStatus.online(store: try StoreID("apple"), since: Date(), instance: oldInstance, heartbeatAt: Date())
            try await mosquittoPub(broker, "restock/apple/status", String(decoding: try JSONEncoder().encode(late), as: UTF8.self), retain: true)
        })
        try await expectTakenOver(old, sku: "late", sent: sent, client: client)
        #expect(newer.exitStatus == nil, "\(newer.log.suffix(600))")
        #expect(broker.log.components(separatedBy: "Client restock:apple already connected").count - 1 <= 1, "the old instance took the session back")
        try await newer.send(SIGTERM)
    }

    @Test("requests the broker sent a frozen store before another took over are applied by the newer one only: the frozen one, woken, finds the end of its connection behind them and leaves them (found by the outside trial: it applied and published them, 22 runs of 22)")
    func requestsReadAfterTakeoverAreLeft() async throws {
        let broker = try await MosquittoBroker.start()
        let old = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let newer = try StoreProcess(broker: broker)
        // Sent while it is frozen: the broker passes the first of them (its in-flight window) to the frozen store's
        // connection, where they wait in the kernel; the newer store takes the session, and they are delivered to it.
        let (sent, _) = try await old.wakeAfterTakeover(by: newer, sku: "held", whileFrozen: {
            try await Requests.publish((0..<30).map { _ in (topic: "restock/apple/admin/stock", payload: Array(#"{"sku":"held","add":1}"#.utf8)) }, to: broker.url)
            return 30
        })
        try await expectTakenOver(old, sku: "held", sent: sent, client: client)
        try await newer.send(SIGTERM)
    }

    @Test("an instance frozen while another took over stays stopped when it wakes after the newer one died: what the newer one acknowledged is in the newer one's data directory (found by the outside trial: it took the session back, 4 runs of 4)")
    func frozenInstanceDoesNotReturnAfterNewerDied() async throws {
        let broker = try await MosquittoBroker.start()
        let old = try await StoreProcess.started(on: broker)
        let newer = try StoreProcess(broker: broker)
        _ = try await old.wakeAfterTakeover(by: newer, sku: "orphan", beforeWaking: {
            try await newer.send(SIGKILL)
        })
        try await expectTakenOver(old, sku: "orphan", sent: 0, client: nil)
    }

    @Test("a store that sees another instance take over stops, applies nothing more, and exits non-zero with one line")
    func takenOverStops() async throws {
        let broker = try await MosquittoBroker.start()
        let first = try await StoreProcess.started(on: broker)
        // What a newer instance does: it takes the store's session (client id), and says it is live in the status.
        let takeover = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: SessionClientIDs.store(try StoreID("apple")), session: .persistent))
        try await takeover.connect()
        let heartbeat = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "newer-heartbeat"))
        try await heartbeat.connect()
        try await waitUntil("the first store to stop", within: 20) {
            let status = StoreStatus.online(store: try StoreID("apple"), since: Date(), instance: "newer0000000", heartbeatAt: Date())
            try await heartbeat.publish(Array(try JSONEncoder().encode(status)), to: "restock/apple/status", qos: .atLeastOnce, retain: true)
            return first.exitStatus != nil
        }
        #expect(first.exitStatus != 0)
        #expect(first.log.contains("took over"), "\(first.log.suffix(500))")
        // The loser did not say it is online over the winner's status. Its will (its own instance, offline) ends its
        // publishing connection, after everything it sent; a real winner answers it at once (StoreServiceTests).
        let client = try broker.storeClient()
        let status = try await client.status()
        #expect(status?.instance == "newer0000000" || status?.isOnline == false, "\(String(describing: status))")
        await takeover.disconnect()
        await heartbeat.disconnect()
    }

    @Test("a store restarted at once after SIGKILLs keeps running: the live statuses queued from before it are older")
    func restartAfterKill() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        // Killed as soon as it is online, it leaves its own fresh online status queued in the store's session.
        try await store.send(SIGKILL)
        try await store.start()
        try await store.send(SIGKILL)
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "ipad")  // queued for the store meanwhile
        try await store.start()
        let mirror = try await client.subscribe(try CustomerID("bob"), to: try SKU("ipad"), wait: 20)
        #expect(mirror.watching.count == 1)
        #expect(store.exitStatus == nil, "\(store.log.suffix(400))")
        #expect(try await client.watching(try CustomerID("alice"))?.watching.count == 1)
        try await store.send(SIGTERM)
    }

    @Test("a forged status, with a heartbeat far in the future, neither stops a running store nor keeps one from starting")
    func forgedStatus() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let forged = #"{"heartbeatAt":"2099-01-01T00:00:00.000Z","instance":"aaaaaaaaaaaa","since":"2099-01-01T00:00:00.000Z","state":"online","store":"apple"}"#
        try await mosquittoPub(broker, "restock/apple/status", forged, retain: true)
        let client = try broker.storeClient()
        try await client.changeStock(of: try SKU("pencil"), .set(1), wait: 20)
        #expect(store.exitStatus == nil, "\(store.log.suffix(300))")
        try await store.send(SIGTERM)
        try await mosquittoPub(broker, "restock/apple/status", forged, retain: true)
        try await store.start()
        #expect(store.exitStatus == nil)
        try await store.send(SIGTERM)
    }

    @Test("two stores with one id started at the same moment: within seconds one is left, the other says why")
    func simultaneousStart() async throws {
        let broker = try await MosquittoBroker.start()
        let first = try StoreProcess(broker: broker), second = try StoreProcess(broker: broker)
        let a = try first.launch(), b = try second.launch()
        try await waitUntil("one of the two to stop", within: 30) { a.exitStatus != nil || b.exitStatus != nil }
        let (loser, winner) = a.exitStatus != nil ? (first, second) : (second, first)
        #expect(loser.exitStatus != 0)
        #expect(loser.log.contains("already running") || loser.log.contains("took over"), "\(loser.log.suffix(300))")
        let client = try broker.storeClient()
        // The loser may refuse while the winner still waits out its own claim: nothing is online before it is.
        try await waitUntil("the winner online", within: 30) { (try? await client.status())?.isOnline == true }
        try await client.changeStock(of: try SKU("pencil"), .set(1), wait: 60)
        #expect(winner.exitStatus == nil)
        try await winner.send(SIGTERM)
    }

    @Test("serve --standby waits without touching broker or database, and takes over when the kernel frees the lock of a SIGKILLed store, not when its lease lapses")
    func standbyTakesOver() async throws {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        try await client.subscribe(try CustomerID("alice"), to: try SKU("ipad"), mode: .every, wait: 60)
        let standby = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
        let child = try standby.launch()
        try await waitUntil("the standby to wait", within: 20) { standby.log.contains("standby") }
        #expect(child.exitStatus == nil)
        let liveInstance = try await client.status()?.instance

        try await live.send(SIGKILL)
        let clock = ContinuousClock(), killed = clock.now
        try await waitUntil("the standby online", within: 60) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.instance != liveInstance && status?.instance != nil
        }
        print("standby online \(clock.now - killed) after the SIGKILL")
        // Typically 0.4–1.1 s (R12 records the time). What is asserted is the way: the lock the kernel freed woke it,
        // not the lease lapsing 5 s later (a clock bound failed CI at 8.6 s on a starved machine).
        #expect(standby.log.contains("the live store process stopped: this standby takes over"), "\(standby.log.suffix(600))")
        #expect(!standby.log.contains("has not renewed"), "\(standby.log.suffix(600))")
        #expect(try await client.watching(try CustomerID("alice"))?.watching.map(\.sku) == ["ipad"])
        try await standby.send(SIGTERM)
    }

    /// After ``StoreProcess/wakeAfterTakeover(by:sku:whileFrozen:beforeWaking:)``: the old instance stopped with one line
    /// saying another took over, and neither journaled nor applied a change of `sku`; the newer one, when `client` reads
    /// it, holds all `sent` (and so does the retained inventory).
    private func expectTakenOver(_ old: StoreProcess, sku: String, sent: Int, client: StoreClient?) async throws {
        #expect(old.exitStatus != nil && old.exitStatus != 0, "\(old.log.suffix(600))")
        #expect(old.log.contains("took over"), "\(old.log.suffix(600))")
        if let client {
            try? await waitUntil("every add at the newer store", within: 30) { (try? await client.inventory(try SKU(sku)).first?.quantity) == sent }
            #expect(try await client.inventory(try SKU(sku)).first?.quantity == sent, "the retained inventory is not the newer store's")
        }
        let applied = try StoreDatabase.snapshot(readingOnly: old.dataDirectory).inventory[try SKU(sku)]
        #expect(applied == nil, "the old instance applied \(applied ?? 0) adds; its whole log (applied once in CI under load, 2026-11-29, when the end of its connection reached it after the requests: ResumptionTests): \(old.log)")
        #expect(try StoreDatabase.queueLengths(readingOnly: old.dataDirectory).inbox == 0, "the old instance journaled requests; its whole log (applied once in CI under load, 2026-11-29, when the end of its connection reached it after the requests: ResumptionTests): \(old.log)")
    }
}
