import Deadlines
import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Synchronization
import Testing

/// The data directory's lease on real processes (docs/architecture.md, "Ownership: the lease"): a standby takes over a
/// store that is frozen (SIGSTOP keeps its lock), and the frozen one, resumed, writes and publishes nothing more.
@Suite("The data directory's lease", .timeLimit(.minutes(3)))
struct LeaseTakeoverTests {
    @Test("serve --standby takes over a frozen store within a few seconds; resumed, the frozen one exits non-zero and nothing it sends reaches the broker; once it ended the new owner takes the lock, and a normal start with a clock 10 minutes ahead is refused in one line")
    func frozenStoreTakenOver() async throws {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        try await client.subscribe(try CustomerID("alice"), to: try SKU("ipad"), mode: .every, wait: 60)
        let standby = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
        let standbyChild = try standby.launch()
        try await waitUntil("the standby to wait", within: 20) { standby.log.contains("standby for store") }
        let oldInstance = try #require(try await client.status()?.instance)

        let frozen = try live.launchedProcess()
        // Holding no lock of its files: one that does is ended by the standby (frozenHoldingALockEnded), not fenced.
        try await live.freeze(holdingALock: false)
        let clock = ContinuousClock(), stopped = clock.now
        try await waitUntil("the standby online", within: 30) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.instance != oldInstance && status?.instance != nil
        }
        let took = clock.now - stopped
        print("standby online \(took) after the SIGSTOP")
        // The lease lapses 5 s after its last renewal the standby saw, and it looks every second: 5–7 s alone. Before the
        // lease it never took over (66 s seen); the wait's deadline catches that; the log line
        // below says it came by the lapse.
        let newInstance = try #require(try await client.status()?.instance)
        #expect(standby.log.contains("has not renewed its lease"), "\(standby.log.suffix(600))")
        // It had the broker close the frozen one's publishing connection before publishing anything.
        #expect(standby.log.contains("closed the publishing connection of the former owner (instance \(oldInstance))"), "\(standby.log.suffix(600))")

        // The standby applies requests.
        for index in 0..<20 { try await mosquittoPub(broker, "restock/apple/subscribe/c\(index)", "iphone") }
        try await StoreQueues.waitForWatches(21, in: live.dataDirectory, within: 30)

        // Everything the old instance might send from now on is seen here.
        let statuses = try await TopicWatcher(broker: broker, filter: "restock/apple/status")
        frozen.send(SIGCONT)
        try await waitUntil("the resumed store to exit", within: 30) { frozen.exitStatus != nil }
        #expect(frozen.exitStatus != 0)
        let errors = live.log.split(separator: "\n").filter { $0.hasPrefix("error:") }
        print("the resumed store exited with \(frozen.exitStatus ?? 0): \(errors.joined(separator: " | "))")
        #expect(errors.count == 1 && errors.first?.contains(newInstance) == true, "\(live.log.suffix(800))")
        #expect(!live.log.contains("store apple offline"), "it drained and said offline: \(live.log.suffix(800))")

        // The newer one goes on, alone: more requests, and the state holds exactly what it applied.
        for index in 20..<30 { try await mosquittoPub(broker, "restock/apple/subscribe/c\(index)", "iphone") }
        try await StoreQueues.waitForWatches(31, in: live.dataDirectory, within: 30)
        try await waitUntil("a heartbeat of the newer instance after the old one exited", within: 10) {
            statuses.payloads(StoreStatus.self, on: "restock/apple/status").contains { $0.instance == newInstance && $0.isOnline }
        }
        let old = statuses.payloads(StoreStatus.self, on: "restock/apple/status").filter { $0.instance == oldInstance && $0.isOnline }
        #expect(old.isEmpty, "the old instance said online again: \(old)")
        let snapshot = try StoreDatabase.snapshot(readingOnly: live.dataDirectory)
        #expect(snapshot.watches.count == 31)
        #expect(try await client.status()?.instance == newInstance)
        #expect(standbyChild.exitStatus == nil)

        // The old process is gone, so the newer one takes the directory's lock it had left.
        try await waitUntil("the newer instance to take the lock", within: 30) { standby.log.contains("holds the data directory's lock now") }
        // A normal start with its clock 10 minutes ahead, which reads the newer one's renewals as stale, is refused by
        // the lock (found by an outside trial: with the lock free, it took the lease, and the newer one stopped).
        let third = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, clockOffset: "+10m")
        let thirdChild = try third.launch()
        try await waitUntil("the normal start to exit", within: 30) { thirdChild.exitStatus != nil }
        #expect(thirdChild.exitStatus != 0)
        let refusal = third.log.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(
            refusal.count == 1 && refusal.first?.contains("another store process is using \(live.dataDirectory.path)") == true,
            "\(third.log.suffix(600))")
        #expect(standbyChild.exitStatus == nil, "\(standby.log.suffix(600))")
        #expect(try await client.status()?.instance == newInstance)
        try await standby.send(SIGTERM)
    }

    @Test("a store frozen in the middle of a fan-out to 3,000 customers and taken over sends none of the alerts it had queued when it resumes (found by an outside trial: 555 of 800 went out again, after the newer store's)")
    func resumedSendsNothingQueued() async throws {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let standby = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
        _ = try standby.launch()
        try await waitUntil("the standby to wait", within: 20) { standby.log.contains("standby for store") }
        let oldInstance = try #require(try await client.status()?.instance)

        let collector = try await fanOutBegun(live, on: broker)
        let frozen = try live.launchedProcess()
        // Between two transactions: frozen in one, it would be ended (frozenHoldingALockEnded), and what it had queued
        // could never go out.
        try await live.freeze(holdingALock: false)
        let queuedAtTheFreeze = 3_000 - collector.customers
        do {
            try await waitUntil("the standby online", within: 60) {
                let status = try? await client.status()
                return status?.isOnline == true && status?.instance != oldInstance && status?.instance != nil
            }
        } catch {
            // Kept for the diagnosis (CI timed out here when the freeze came in the middle of a write transaction).
            Issue.record("the standby's log: \(standby.log.suffix(3_000))")
            throw error
        }
        // The newer store sends what the frozen one had not had acknowledged, and empties the outbox.
        try await waitUntil("every customer alerted", within: 120) { collector.customers == 3_000 }
        try await waitUntil("the newer store's outbox empty", within: 60) {
            (try? StoreDatabase.queueLengths(readingOnly: live.dataDirectory).outbox) == 0
        }
        let beforeWaking = collector.total
        print("frozen with \(queuedAtTheFreeze) customers not yet alerted; \(beforeWaking) alerts before it woke")

        frozen.send(SIGCONT)
        try await waitUntil("the resumed store to exit", within: 60) { frozen.exitStatus != nil }
        #expect(frozen.exitStatus != 0)
        // One more alert, from the newer store after the old process ended: the broker has taken everything the old one
        // wrote before it (one socket, read in order, before its end) by the time this one arrives.
        try await mosquittoPub(broker, "restock/apple/subscribe/marker", #"{"sku":"marker","mode":"once"}"#)
        try await StoreQueues.waitForWatches(3_001, in: live.dataDirectory, within: 30)
        try await client.changeStock(of: try SKU("marker"), .set(1), wait: 30)
        try await waitUntil("the marker alert", within: 30) { collector.idsByCustomer["marker"] != nil }
        let late = collector.total - beforeWaking - 1
        #expect(late == 0, "the resumed store sent \(late) alerts it had queued before the freeze")
        // Which came first on waking decides how it stopped — its connections' write gate, or the lease's renewal — and
        // either way it wrote nothing: the count above is the test.
        print("the write gate refused on waking: \(live.log.contains("the write gate refused"))")
        try await standby.send(SIGTERM)
    }

    @Test("a store frozen while it holds a lock of its files (caught under a stream of requests) is ended by its standby, which takes over and applies every request the broker had taken (found by CI: the standby waited \"to start\" on store.sqlite's lock until the deadline)")
    func frozenHoldingALockEnded() async throws {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let standby = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
        let standbyChild = try standby.launch()
        try await waitUntil("the standby to wait", within: 20) { standby.log.contains("standby for store") }
        let oldInstance = try #require(try await client.status()?.instance)

        // Requests in batches of 50, acknowledged by the broker, until the store is caught holding a lock.
        let sent = Mutex(0), stop = Mutex(false)
        let load = Task {
            // Each batch whole, acknowledged: every request sent is counted.
            while !stop.withLock({ $0 }) {
                let first = sent.withLock { $0 }
                let batch = Requests.subscriptions(Requests.customers(first + 50, prefix: "c").suffix(50), to: "ipad")
                try await Requests.publish(batch, to: broker.url)
                sent.withLock { $0 = first + 50 }
            }
        }
        let file = try #require(try await live.freeze(holdingALock: true))
        let frozen = try live.launchedProcess()
        stop.withLock { $0 = true }
        try await load.value
        let requests = sent.withLock { $0 }
        print("frozen holding a lock of \(file), \(requests) requests sent")

        try await waitUntil("the standby online", within: 60) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.instance != oldInstance && status?.instance != nil
        }
        #expect(standby.log.contains("this standby ended it (SIGKILL) to take over"), "\(standby.log.suffix(1_200))")
        try await waitUntil("the frozen store to end", within: 30) { frozen.exitStatus != nil }
        #expect(frozen.exitStatus == 128 + SIGKILL)
        // Every request the broker acknowledged is applied, once: what the frozen store had taken and not applied too.
        try await StoreQueues.waitForWatches(requests, in: live.dataDirectory, within: 60)
        try await StoreQueues.waitUntilDrained(live.dataDirectory, within: 60)
        #expect(standbyChild.exitStatus == nil)
        try await standby.send(SIGTERM)
    }

    @Test("two standbys: the one that takes over a frozen store by its lease gets the directory's lock when the frozen one is killed, not the other; killed in turn, it is followed at once through the lock (found by an outside trial: the other standby kept the lock, 2 of 2)")
    func lockGoesToTheOwner() async throws {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let standbys = try (0..<2).map { _ in
            try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
        }
        let children = try standbys.map { try $0.launch() }
        for standby in standbys {
            try await waitUntil("the standby to wait", within: 20) { standby.log.contains("standby for store") }
        }
        let oldInstance = try #require(try await client.status()?.instance)
        let frozen = try live.launchedProcess()
        try await live.freeze(holdingALock: false)
        try await waitUntil("a standby online", within: 60) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.instance != oldInstance && status?.instance != nil
        }
        // The one that took it by the lapse (the other may have named it in an error while it was taking it).
        let owner = try #require(standbys.firstIndex { $0.log.contains("s: this standby takes over (the old process") })
        let other = 1 - owner
        frozen.send(SIGKILL)
        try await waitUntil("the owner to take the directory's lock", within: 30) {
            standbys[owner].log.contains("holds the data directory's lock now")
        }
        let ownerInstance = try #require(try await client.status()?.instance)
        try await standbys[owner].send(SIGKILL)
        try await waitUntil("the other standby online", within: 60) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.instance != ownerInstance && status?.instance != nil
        }
        #expect(standbys[other].log.contains("the live store process stopped: this standby takes over"), "\(standbys[other].log.suffix(800))")
        #expect(children[other].exitStatus == nil)
        try await standbys[other].send(SIGTERM)
    }

    @Test("a standby killed after it took a frozen store's lease, before it had the broker close that store's publishing connection: the next standby closes it, and neither waits on the frozen store's heartbeat (found by an outside trial: the next one closed the dead standby's connection instead, and came online 9 s late)")
    func standbyKilledMidTakeover() async throws {
        let broker = try await MosquittoBroker.start()
        let live = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let oldInstance = try #require(try await client.status()?.instance)
        let dying = try StoreProcess(
            broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"],
            environment: ["RESTOCK_FAULT": "crash-before-closing-the-former-publisher"])
        let dyingChild = try dying.launch()
        try await waitUntil("the first standby to wait", within: 20) { dying.log.contains("standby for store") }
        let frozen = try live.launchedProcess()
        try await live.freeze(holdingALock: false)
        try await waitUntil("the first standby to die in its takeover", within: 60) { dyingChild.exitStatus != nil }
        #expect(dying.log.contains("fault injected: crash-before-closing-the-former-publisher"), "\(dying.log.suffix(600))")

        let next = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
        let nextChild = try next.launch()
        try await waitUntil("the next standby online", within: 60) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.instance != oldInstance && status?.instance != nil
        }
        // The frozen store's connection closed too, not only the dead standby's, whose lease it found.
        #expect(
            next.log.contains("closed the publishing connection of the former owner (instance \(oldInstance))"), "\(next.log.suffix(800))")
        #expect(!next.log.contains("already running"), "\(next.log.suffix(800))")
        // It applies requests.
        for index in 0..<5 { try await mosquittoPub(broker, "restock/apple/subscribe/c\(index)", "iphone") }
        try await StoreQueues.waitForWatches(5, in: live.dataDirectory, within: 30)
        #expect(nextChild.exitStatus == nil)
        frozen.send(SIGKILL)
        try await next.send(SIGTERM)
    }
}
