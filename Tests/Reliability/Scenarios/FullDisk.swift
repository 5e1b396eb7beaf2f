import RestockPipeline
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R13: the data directory on a small file system (tmpfs) that fills up under a stream of subscribe requests, then
/// grows again: the store pauses — it stays up, says why in its status, takes no request it cannot journal (they
/// wait on the broker) — and resumes by itself; every request sent is applied once the space is back, and a restock
/// then alerts every customer. Mounting needs root (CI runs as root); elsewhere the row says so.
enum FullDisk {
    static let customers = 2_000
    static let skusEach = 10

    static func run() async throws -> ScenarioRow {
        let action = "data directory on a 3 MiB tmpfs that fills under \(customers * skusEach) subscribes (\(customers) customers × \(skusEach) SKUs), then grows to 256 MiB; then a restock (counts: requests applied, then alerts)"
        guard getuid() == 0 else {
            var row = ScenarioRow("R13", action, expected: 0, distinct: 0, deliveries: 0)
            row.failures.append("needs root to mount a tmpfs (run make reliability as root, as CI does)")
            return row
        }
        let mountPoint = try temporaryDirectory()
        try await run("mount", ["-t", "tmpfs", "-o", "size=3M", "tmpfs", mountPoint.path])
        defer {
            _ = try? Process.run(URL(fileURLWithPath: "/bin/umount"), arguments: ["-l", mountPoint.path])
            try? FileManager.default.removeItem(at: mountPoint)
        }
        let data = mountPoint.appendingPathComponent("apple")
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let store = try StoreProcess(broker: broker, dataDirectory: data)
        try await store.start()
        let client = try broker.storeClient()

        let ids = Requests.customers(customers, prefix: "r13c")
        let requests = (0..<skusEach).flatMap { sku in ids.map { (topic: "restock/apple/subscribe/\($0)", payload: Array("r13-\(sku)".utf8)) } }
        let clock = ContinuousClock()
        let began = clock.now
        // Every request is acknowledged by the broker: the ones the store could not journal wait in its session.
        try await Requests.publish(requests, to: broker.url)
        var pausedAt: Duration?
        if (try? await waitUntil("the store to say it is paused", within: 60, pollEvery: .milliseconds(100), {
            (try? await client.status())?.paused != nil
        })) != nil {
            pausedAt = clock.now - began
        }
        let storedWhilePaused = (try? StoreDatabase.queueLengths(readingOnly: data).watches) ?? -1
        let aliveWhilePaused = store.exitStatus == nil
        try await run("mount", ["-o", "remount,size=256M", mountPoint.path])
        let grown = clock.now
        try? await StoreQueues.waitForWatches(requests.count, in: data, within: 300)
        let resumed = clock.now - grown
        let stored = (try? StoreDatabase.queueLengths(readingOnly: data).watches) ?? 0

        let collector = try await AlertCollector(broker: broker)
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"r13-0","set":1}"#)
        try? await waitUntil("every alert", within: 120) { collector.distinct >= customers }

        var row = ScenarioRow("R13", action, expected: requests.count + customers, distinct: stored + collector.distinct, deliveries: stored + collector.total)
        row.notes.append(
            "paused \(pausedAt.map(Restore.seconds) ?? "never") after the first request, with \(storedWhilePaused) watches stored; all applied \(Restore.seconds(resumed)) after the space came back")
        row.notes.append("alerts after the restock: \(collector.distinct) of \(customers); store log: \(pauseLines(store.log))")
        row.check(pausedAt != nil, "the store never said it was paused (the disk did not fill?)")
        row.check(aliveWhilePaused && store.exitStatus == nil, "the store exited: \(store.log.suffix(300))")
        row.check(!store.log.contains("Fatal error"), "the store crashed")
        row.check(store.log.contains("resumed journaling requests"), "no resume in the store's log")
        await collector.close()
        try await store.send(SIGTERM)
        return row
    }

    /// How many pause, still-paused and resume lines the store logged.
    static func pauseLines(_ log: String) -> String {
        let count = { (text: String) in log.components(separatedBy: text).count - 1 }
        return "\(count("] paused ")) paused, \(count("still paused")) still paused, \(count("resumed ")) resumed"
    }

    static func run(_ command: String, _ arguments: [String]) async throws {
        let result = try await ChildProcess.run(command, arguments)
        guard result.status == 0 else { throw ScenarioFailure("\(command) \(arguments.joined(separator: " ")): \(result.standardError)") }
    }
}

/// A step of a scenario that could not be done.
struct ScenarioFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
