import RestockPipeline
import Foundation
import GRDB
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing
import Deadlines

/// A stage of the running store that fails ends the service with its real error: `restock serve` exits
/// non-zero naming it, instead of running on, online, without that stage. Rows of the database that hold no
/// valid record are skipped with a log line, never trapped on.
@Suite("A failing stage fails the store loudly", .timeLimit(.minutes(3)))
struct StageFailureTests {
    /// Opens the stopped store's database directly, as an operator (or a damaged disk) might.
    func withDatabase(of store: StoreProcess, _ body: (Database) throws -> Void) throws {
        let queue = try DatabaseQueue(path: store.dataDirectory.appendingPathComponent("store.sqlite").path)
        try queue.write(body)
    }

    @Test("the database refuses a commit: the store drains, goes offline, and exits non-zero naming the stage and the error")
    func commitRefused() async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let store = try await StoreProcess.started(on: broker)
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "ipad")
        try await waitUntil("alice's watch stored") { (try? StoreDatabase.snapshot(readingOnly: store.dataDirectory).watches.count) == 1 }
        try await store.send(SIGTERM)
        // From now on the database refuses to queue boom's mirror (and so to commit the batch that makes it).
        try withDatabase(of: store) { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse_boom BEFORE INSERT ON outbox WHEN NEW.topic = 'restock/apple/customers/boom/subscriptions'
                    BEGIN SELECT RAISE(ABORT, 'the disk refuses boom'); END;
                    """)
        }
        try await store.start()
        try await mosquittoPub(broker, "restock/apple/subscribe/boom", "ipad")
        let exit = try await waitForExit(store, within: 30)
        #expect(exit != 0, "\(store.log.suffix(600))")
        #expect(store.log.contains("the store stopped: applying requests failed"), "\(store.log.suffix(600))")
        #expect(store.log.contains("the disk refuses boom"), "\(store.log.suffix(600))")
        let client = try broker.storeClient()
        #expect(try await client.status()?.isOnline == false, "it does not stay online without applying requests")

        // No crash loop: the next start retries the request alone and fails again; the one after sets it aside,
        // answers request-failed, and carries on with the others.
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/+/errors")
        try store.launch()
        #expect(try await waitForExit(store, within: 30) != 0)
        try await store.start()
        try await watcher.wait(for: "boom's request-failed") { watcher in
            watcher.payloads(ErrorReport.self, on: "restock/apple/customers/boom/errors").contains { $0.error == "request-failed" }
        }
        let mirror = try await client.subscribe(try CustomerID("carol"), to: try SKU("ipad"), wait: 20)
        #expect(mirror.watching.count == 1)
        #expect(store.exitStatus == nil)
        try await store.send(SIGTERM)
    }

    @Test("rows that hold no valid record are skipped with a log line, and the store starts with the rest")
    func damagedRowsSkipped() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "ipad")
        try await waitUntil("alice's watch stored") { (try? StoreDatabase.snapshot(readingOnly: store.dataDirectory).watches.count) == 1 }
        try await store.send(SIGTERM)
        try withDatabase(of: store) { db in
            try db.execute(sql: "INSERT INTO watch VALUES ('bad id!', 'ipad', 'once', 1, 900, 0, 0, NULL)")
            try db.execute(sql: "INSERT INTO watch VALUES ('bob', 'ipad', 'once', 'many', 901, 0, 0, NULL)")  // a text minQuantity
            try db.execute(sql: "INSERT INTO watch VALUES ('carol', 'ipad', 'once', -5, 902, 0, 0, NULL)")
            try db.execute(sql: "INSERT INTO inventory VALUES ('ipad', 'lots')")
        }
        try await store.start()
        let skips = store.log.split(separator: "\n").filter { $0.contains("skipped a row of the database") }
        #expect(skips.count == 4, "\(store.log.suffix(800))")
        // The valid watch is there and works; a new watch takes a position after every row, valid or not.
        let client = try broker.storeClient()
        let mirror = try await client.subscribe(try CustomerID("dave"), to: try SKU("ipad"), wait: 20)
        #expect(mirror.watching.first?.position == 903)
        #expect(try await client.watching(try CustomerID("alice"))?.watching.count == 1)
        try await store.send(SIGTERM)
    }

    private func waitForExit(_ store: StoreProcess, within seconds: Double) async throws -> Int32 {
        try await waitUntil("the store to exit", within: seconds) { store.exitStatus != nil }
        return store.exitStatus ?? -1
    }
}
