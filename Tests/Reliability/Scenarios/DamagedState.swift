import RestockPipeline
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport

/// R14: the store's state emptied (store.sqlite truncated to 0 bytes) or replaced by an older copy after the request
/// log has moved on and forgotten what it applied: the store refuses to start, with one line that names
/// store.sqlite and says to restore both files from one backup — it never starts with fewer watches than the two
/// files held (counts: refusals).
enum DamagedState {
    static let customers = 3_000

    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let data = store.dataDirectory
        let backup = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: backup) }
        // A first 1,000 watches, and a consistent copy of the state as it was then (the store stopped cleanly).
        let first = Requests.customers(1_000, prefix: "r14a")
        try await Requests.publish(Requests.subscriptions(first, to: "r14"), to: broker.url)
        try await StoreQueues.waitForWatches(first.count, in: data, within: 60)
        try await store.send(SIGTERM)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: data.appendingPathComponent("store.sqlite" + suffix).path) {
            try FileManager.default.copyItem(at: data.appendingPathComponent("store.sqlite" + suffix), to: backup.appendingPathComponent("store.sqlite" + suffix))
        }
        // 3,000 more: the log applies and forgets them (it trims every 2,048).
        try await store.start()
        let second = Requests.customers(customers, prefix: "r14b")
        try await Requests.publish(Requests.subscriptions(second, to: "r14"), to: broker.url)
        try await StoreQueues.waitForWatches(first.count + second.count, in: data, within: 60)
        try await store.send(SIGTERM)
        let saved = data.appendingPathComponent("saved")
        try FileManager.default.createDirectory(at: saved, withIntermediateDirectories: true)
        for name in ["store.sqlite", "store.sqlite-wal"] where FileManager.default.fileExists(atPath: data.appendingPathComponent(name).path) {
            try FileManager.default.copyItem(at: data.appendingPathComponent(name), to: saved.appendingPathComponent(name))
        }

        var refusals: [String] = []
        var failures: [String] = []
        for damage in ["emptied", "older copy"] {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(at: data.appendingPathComponent("store.sqlite" + suffix)) }
            if damage == "emptied" {
                try Data().write(to: data.appendingPathComponent("store.sqlite"))
            } else {
                for name in ["store.sqlite", "store.sqlite-wal"] where FileManager.default.fileExists(atPath: backup.appendingPathComponent(name).path) {
                    try FileManager.default.copyItem(at: backup.appendingPathComponent(name), to: data.appendingPathComponent(name))
                }
            }
            let child = try store.launch()
            _ = try await child.waitForExit(within: 30)
            let errors = store.log.split(separator: "\n").filter { $0.hasPrefix("error: ") }.map(String.init)
            let line = errors.last ?? ""
            if child.exitStatus != 0, line.contains(data.appendingPathComponent("store.sqlite").path), line.contains("restore both files from one backup") {
                refusals.append("\(damage): exit \(child.exitStatus ?? -1), \"\(line.prefix(160))…\"")
            } else {
                failures.append("\(damage): exit \(child.exitStatus.map(String.init) ?? "none (it started)"), \(line.isEmpty ? store.log.suffix(200) : Substring(line))")
                if child.exitStatus == nil { try await store.send(SIGTERM) }
            }
        }
        // The two files as they belong together: the store starts with every watch.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(at: data.appendingPathComponent("store.sqlite" + suffix)) }
        for name in ["store.sqlite", "store.sqlite-wal"] where FileManager.default.fileExists(atPath: saved.appendingPathComponent(name).path) {
            try FileManager.default.copyItem(at: saved.appendingPathComponent(name), to: data.appendingPathComponent(name))
        }
        try await store.start()
        let watches = (try? StoreDatabase.queueLengths(readingOnly: data).watches) ?? 0

        var row = ScenarioRow(
            "R14", "store.sqlite emptied, then replaced by a copy 3,000 requests older than its log, each started on; then both files as they belong (counts: refusals)",
            expected: 2, distinct: refusals.count, deliveries: refusals.count)
        row.notes += refusals
        row.notes.append("both files restored together: the store started with \(watches) watches of \(first.count + second.count)")
        row.failures += failures
        row.check(watches == first.count + second.count, "started with \(watches) watches, not \(first.count + second.count)")
        try await store.send(SIGTERM)
        return row
    }
}
