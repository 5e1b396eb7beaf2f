import RestockPipeline
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R7: a second `restock serve` for a store that is already running.
enum TwoStores {
    static let customers = 50

    static func run() async throws -> [ScenarioRow] {
        [try await sameDataDirectory(), try await otherDataDirectory(), try await simultaneousStarts(), try await pausedComesBack(), try await cutOffComesBack()]
    }

    /// R7e: the live store's network goes silent (a proxy holds every byte, both connections stay open) until its
    /// heartbeat is stale and a second store has taken over; then the network returns in the middle of a stream
    /// of stock changes. The first must not take the session back (it could not read the status while cut off,
    /// so it keeps asking before it reconnects), and applies nothing.
    static func cutOffComesBack() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let proxy = try TCPProxy(to: broker.port)
        defer { proxy.close() }
        let old = try StoreProcess(broker: broker, brokerURL: proxy.url)
        try await old.start()
        let client = try broker.storeClient()
        proxy.blackhole(true)
        try await waitUntil("the cut-off store's heartbeat to go stale", within: 20, pollEvery: .milliseconds(250)) {
            (try? await client.status())?.isLive(at: Date()) == false
        }
        let newer = try StoreProcess(broker: broker)
        try await newer.start()
        let batch = (0..<10).map { _ in (topic: "restock/apple/admin/stock", payload: Array(#"{"sku":"r7e-sku","add":1}"#.utf8)) }
        var sent = 0
        for round in 0..<60 {
            if round == 5 { proxy.blackhole(false) }  // the network returns mid-stream
            try await Requests.publish(batch, to: broker.url)
            sent += batch.count
        }
        let total = sent
        try? await waitUntil("the first store to stop", within: 30) { old.exitStatus != nil }
        try? await waitUntil("every stock change at the newer store", within: 30) {
            (try? await client.inventory(try SKU("r7e-sku")).first?.quantity) == total
        }
        let applied = (try? await client.inventory(try SKU("r7e-sku")).first?.quantity) ?? 0
        let appliedByOld = (try? StoreDatabase.snapshot(readingOnly: old.dataDirectory).inventory[try SKU("r7e-sku")]) ?? nil
        // The store's session only (`restock:apple`): a publishing connection (`restock:apple:@…`) that reconnects while
        // the broker still holds its held link replaces itself, which takes nothing from anyone.
        let takeovers = broker.log.components(separatedBy: "Client \(SessionClientIDs.store(try StoreID("apple"))) already connected, closing old connection").count - 1
        var row = ScenarioRow(
            "R7e", "the live store cut off (every byte held, connections open, as in a partition) until a second takes over; the network returns mid-stream of \(total) stock changes (counts: changes applied)",
            expected: total, distinct: applied, deliveries: applied)
        row.notes.append("the first: exit \(old.exitStatus ?? -1), changes applied by it: \(appliedByOld ?? 0); sessions taken over on the broker: \(takeovers)")
        row.check(old.exitStatus != nil && old.exitStatus != 0, "the first store did not stop")
        row.check(old.exitStatus == nil || old.exitStatus == 1, "the first store did not stop cleanly (exit \(old.exitStatus ?? -1))")
        if let status = old.exitStatus, status != 1 { say("R7e: the first store's log ends:\n\(old.log.suffix(3000))") }
        row.check(appliedByOld == nil, "the first store applied \(appliedByOld ?? 0) changes after the network returned")
        row.check(takeovers <= 1, "the first store took the session back (\(takeovers) takeovers in the broker's log)")
        try await newer.send(SIGTERM)
        return row
    }

    /// R7d: the live store frozen (SIGSTOP: a stalled process or a host cut off) until its heartbeat is stale, a
    /// second store on another data directory takes over, and the first wakes up in the middle of a stream of
    /// stock changes: it must stop before it takes the session back, applying nothing; the second applies all.
    static func pausedComesBack() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let old = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        let newer = try StoreProcess(broker: broker)
        let (total, tookOver) = try await old.wakeAfterTakeover(by: newer, sku: "r7d-sku")
        try? await waitUntil("every stock change at the newer store", within: 30) {
            (try? await client.inventory(try SKU("r7d-sku")).first?.quantity) == total
        }
        let applied = (try? await client.inventory(try SKU("r7d-sku")).first?.quantity) ?? 0
        let appliedByOld = (try? StoreDatabase.snapshot(readingOnly: old.dataDirectory).inventory[try SKU("r7d-sku")]) ?? nil
        var row = ScenarioRow(
            "R7d", "the live store frozen (SIGSTOP) until its heartbeat is stale, a second takes over, the first wakes mid-stream of \(total) stock changes (counts: changes applied)",
            expected: total, distinct: applied, deliveries: applied)
        row.notes.append(
            "second store online \(tookOver.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))) after the freeze; the first: exit \(old.exitStatus ?? -1), changes applied by it: \(appliedByOld ?? 0)")
        row.check(old.exitStatus != nil && old.exitStatus != 0, "the first store did not stop")
        row.check(old.exitStatus == nil || old.exitStatus == 1, "the first store did not stop cleanly (exit \(old.exitStatus ?? -1))")
        if let status = old.exitStatus, status != 1 { say("R7d: the first store's log ends:\n\(old.log.suffix(3000))") }
        row.check(old.log.contains("took over"), "the first store did not say another took over")
        row.check(appliedByOld == nil, "the first store applied \(appliedByOld ?? 0) changes after it woke")
        try await newer.send(SIGTERM)
        return row
    }

    /// R7c: three stores of one id started at the same moment, each on its own data directory, while 20 subscribes
    /// stream in: the claim lets exactly one go on; the others refuse before they take the session or a request.
    static func simultaneousStarts() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let before = try await StoreProcess.started(on: broker)  // the store's session exists: requests queue in it
        try await before.send(SIGTERM)
        let stores = try (0..<3).map { _ in try StoreProcess(broker: broker) }
        let children = try stores.map { try $0.launch() }
        let ids = Requests.customers(20, prefix: "r7c-")
        try await Requests.publish(Requests.subscriptions(ids, to: "r7c-sku"), to: broker.url)
        try await waitUntil("all but one store to exit", within: 30) { children.filter { $0.exitStatus != nil }.count >= 2 }
        let running = stores.indices.filter { children[$0].exitStatus == nil }
        let losers = stores.indices.filter { !running.contains($0) }
        let appliedByLosers = losers.map { (try? StoreDatabase.snapshot(readingOnly: stores[$0].dataDirectory).watches.count) ?? 0 }.reduce(0, +)
        let refusals = losers.map { stores[$0].log.split(separator: "\n").last { $0.hasPrefix("error:") }.map(String.init) ?? "" }
        var (distinct, deliveries) = (0, 0)
        if running.count == 1, let winner = running.first {
            try await StoreQueues.waitForWatches(ids.count, in: stores[winner].dataDirectory, within: 60)
            let collector = try await AlertCollector(broker: broker)
            try await StockStream(url: broker.url, sku: "r7c-sku").set(5)
            try? await waitUntil("every alert", within: 60) { collector.distinct >= ids.count }
            (distinct, deliveries) = (collector.distinct, collector.total)
            await collector.close()
        }
        var row = ScenarioRow(
            "R7c", "three `restock serve` for one store started at the same moment on three data directories, during 20 subscribes; then a restock",
            expected: ids.count, distinct: distinct, deliveries: deliveries)
        row.notes.append("\(running.count) running; the others: exits \(losers.map { children[$0].exitStatus ?? -1 }); requests applied by them: \(appliedByLosers)")
        row.check(running.count == 1, "\(running.count) stores kept running")
        row.check(refusals.allSatisfy { $0.contains("already running") }, "a store that stopped did not say the store is already running: \(refusals)")
        row.check(appliedByLosers == 0, "the stores that stopped applied \(appliedByLosers) requests")
        for index in running { try await stores[index].send(SIGTERM) }
        return row
    }

    /// R7b: on another data directory: the second finds the first live on the broker (its status heartbeat),
    /// refuses to start, takes no request and touches no session; the first serves every request and alert.
    static func otherDataDirectory() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let first = try await StoreProcess.started(on: broker)
        let second = try StoreProcess(broker: broker)
        let child = try second.launch()
        let ids = Requests.customers(20, prefix: "r7b-")
        let sending = Task { try await Requests.publish(Requests.subscriptions(ids, to: "r7b-sku"), to: broker.url) }
        try await waitUntil("the second store to exit", within: 30) { child.exitStatus != nil }
        try await sending.value
        try await StoreQueues.waitForWatches(ids.count, in: first.dataDirectory, within: 60)
        let collector = try await AlertCollector(broker: broker)
        try await StockStream(url: broker.url, sku: "r7b-sku").set(5)
        try? await waitUntil("every alert", within: 60) { collector.distinct >= ids.count }
        let refusal = second.log.split(separator: "\n").last { $0.hasPrefix("error:") }.map(String.init) ?? ""
        let appliedBySecond = (try? StoreDatabase.snapshot(readingOnly: second.dataDirectory).watches.count) ?? 0

        var row = ScenarioRow(
            "R7b", "a second `restock serve` for the same store on another data directory, during 20 subscribes; then a restock",
            expected: ids.count, distinct: collector.distinct, deliveries: collector.total)
        row.notes.append("second store: exit \(child.exitStatus ?? -1), \"\(refusal)\"; requests applied by it: \(appliedBySecond)")
        row.check(child.exitStatus != 0, "the second store did not stop")
        row.check(refusal.contains("already running"), "the second store did not say the store is already running")
        row.check(appliedBySecond == 0, "the second store applied \(appliedBySecond) requests")
        row.check(first.exitStatus == nil && !first.log.contains("connectionLost"), "the first store lost its session or stopped")
        await collector.close()
        try await first.send(SIGTERM)
        return row
    }

    /// On the same data directory: the second is refused by the directory lock, changes nothing, and the
    /// first carries on.
    static func sameDataDirectory() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let first = try await StoreProcess.started(on: broker)
        let ids = Requests.customers(customers, prefix: "twin")
        try await Requests.publish(Requests.subscriptions(ids, to: "twin-sku"), to: broker.url)
        try await StoreQueues.waitForWatches(customers, in: first.dataDirectory, within: 60)
        let before = try StoreDatabase.snapshot(readingOnly: first.dataDirectory)

        let second = try StoreProcess(broker: broker, dataDirectory: first.dataDirectory)
        let child = try second.launch()
        try await waitUntil("the second store to exit", within: 30) { child.exitStatus != nil }
        let refusal = second.log.split(separator: "\n").last.map(String.init) ?? ""
        let after = try StoreDatabase.snapshot(readingOnly: first.dataDirectory)

        let collector = try await AlertCollector(broker: broker)
        try await StockStream(url: broker.url, sku: "twin-sku").set(5)
        try? await waitUntil("every alert", within: 60) { collector.distinct >= customers }

        var row = ScenarioRow(
            "R7", "a second `restock serve` started on the running store's data directory; then a restock",
            expected: customers, distinct: collector.distinct, deliveries: collector.total)
        row.notes.append("second store: exit \(child.exitStatus ?? -1), \"\(refusal)\"")
        row.check(child.exitStatus != 0, "the second store did not stop")
        row.check(refusal.contains("another store process is using"), "the second store did not say another process uses the data directory")
        row.check(before.watches == after.watches && before.nextPosition == after.nextPosition, "the state changed when the second store started")
        row.check(first.exitStatus == nil, "the first store stopped")
        await collector.close()
        try await first.send(SIGTERM)
        return row
    }
}
