import Foundation
import LocalBroker
import RestockMQTT
import RestockTestSupport
import Deadlines

/// R6: 50 restocks alert 1,000 offline customers (50,000 alerts) through the shipped broker configuration,
/// with its password file and ACL; each customer then comes back for its 50.
enum Burst {
    static let customers = 1_000
    static let rises = 50
    /// How many customers connect at once.
    static let concurrency = 50

    static func password(_ customer: String) -> String { "pw-\(customer)" }

    static func run() async throws -> ScenarioRow {
        let ids = Requests.customers(customers, prefix: "burst")
        let broker = try await MosquittoBroker.shipped(users: Dictionary(uniqueKeysWithValues: ids.map { ($0, password($0)) }))
        let store = try StoreProcess(broker: broker, extraArguments: ["--username", "store-apple"], environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "admin", password: "admin-secret")

        // Each customer, as itself: opens its persistent session, asks for `every` alert of "burst", goes away.
        try await inChunks(ids) { id in
            let session = try await CustomerSession(id, url: broker.url, username: id, password: password(id))
            try await session.publish(#"{"sku":"burst","mode":"every"}"#, to: "restock/apple/subscribe/\(id)")
            await session.close()
            return (0, 0)
        }
        try await StoreQueues.waitForWatches(customers, in: store.dataDirectory, within: 120)

        let clock = ContinuousClock()
        let started = clock.now
        let lines = String(repeating: #"{"sku":"burst","set":0}"# + "\n" + #"{"sku":"burst","set":2}"# + "\n", count: rises)
        let pub = try await ChildProcess.run(
            "mosquitto_pub",
            ["-p", String(broker.port), "-h", "127.0.0.1", "-u", "admin", "-P", "admin-secret", "-q", "1", "-t", "restock/apple/admin/stock", "-l"],
            input: Data(lines.utf8))
        guard pub.status == 0 else { throw StoreExited(status: pub.status, log: pub.standardError) }
        try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 300)
        let published = clock.now - started

        // Everyone back: each reads what its session queued.
        let counts = try await inChunks(ids) { id in
            let session = try await CustomerSession(id, url: broker.url, username: id, password: password(id))
            try? await waitUntil("\(id)'s alerts", within: 30) { session.distinct >= rises }
            await session.close()
            return (session.distinct, session.deliveries)
        }
        let distinct = counts.reduce(0) { $0 + $1.0 }
        var row = ScenarioRow(
            "R6", "50 restocks × 1,000 offline customers = 50,000 alerts, shipped mosquitto.conf (passwords, ACL, queue limits)",
            expected: customers * rises, distinct: distinct, deliveries: counts.reduce(0) { $0 + $1.1 })
        let rate = Double(customers * rises) / (Double(published.components.seconds) + Double(published.components.attoseconds) / 1e18)
        row.notes.append("all 50,000 acknowledged by the broker \(published.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))) after the first restock (\(Int(rate)) alerts/s)")
        row.check(counts.allSatisfy { $0.0 == rises }, "\(counts.filter { $0.0 != rises }.count) customers did not get all \(rises)")
        row.check(!broker.log.contains("Outgoing messages are being dropped"), "mosquitto dropped messages")
        try await store.send(SIGTERM)
        return row
    }

    /// Runs `body` for every id, `concurrency` at a time, and returns the results in order.
    @discardableResult
    static func inChunks(_ ids: [String], _ body: @escaping @Sendable (String) async throws -> (Int, Int)) async throws -> [(Int, Int)] {
        var results: [(Int, Int)] = []
        for start in stride(from: 0, to: ids.count, by: concurrency) {
            let chunk = Array(ids[start..<min(start + concurrency, ids.count)])
            results += try await withThrowingTaskGroup(of: (Int, (Int, Int)).self) { group in
                for (index, id) in chunk.enumerated() { group.addTask { (index, try await body(id)) } }
                var chunkResults = [(Int, Int)](repeating: (0, 0), count: chunk.count)
                for try await (index, result) in group { chunkResults[index] = result }
                return chunkResults
            }
        }
        return results
    }
}
