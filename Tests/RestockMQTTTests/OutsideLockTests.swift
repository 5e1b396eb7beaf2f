import Foundation
import GRDB
import LocalBroker
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing
import Deadlines

/// A lock another process holds on one of the store's files pauses it, never stops it (docs/operations.md, "Another
/// process holding a file").
@Suite("Outside locks", .timeLimit(.minutes(4)))
struct OutsideLockTests {
    @Test("another process holding a file's write lock pauses the store, which says why and resumes by itself when the lock goes", arguments: ["store.sqlite", "journal.sqlite"])
    func outsideLockPauses(_ file: String) async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        let client = try broker.storeClient()
        // As `sqlite3 DIR/store.sqlite 'BEGIN IMMEDIATE; …'` left open would: another process, from the store's view.
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        configuration.busyMode = .timeout(10)
        let holder = try DatabaseQueue(path: store.dataDirectory.appendingPathComponent(file).path, configuration: configuration)
        try holder.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }

        let customers = Requests.customers(50, prefix: "c")
        let sending = Task { try await Requests.publish(Requests.subscriptions(customers, to: "ipad"), to: broker.url) }
        try await waitUntil("the store to say it is paused", within: 60, pollEvery: .milliseconds(50)) {
            if store.exitStatus != nil { return true }
            return (try? await client.status())?.paused?.contains("locked by another process") == true
        }
        #expect(store.exitStatus == nil, "the store stopped: \(store.log.suffix(800))")

        try holder.inDatabase { db in try db.execute(sql: "ROLLBACK") }
        try await sending.value
        try await StoreQueues.waitForWatches(customers.count, in: store.dataDirectory, within: 60)
        try await waitUntil("the status to say the store takes requests again", within: 30) {
            let status = try? await client.status()
            return status?.isOnline == true && status?.paused == nil
        }
        #expect(store.exitStatus == nil)
        try await store.send(SIGTERM)
    }

    @Test("a store started while another process holds its state's write lock waits, says so, and starts when the lock goes")
    func outsideLockAtStart() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        try await store.send(SIGTERM)
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: store.dataDirectory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        try holder.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        try store.launch()
        try await waitUntil("the store to say it waits for the lock", within: 60) {
            store.exitStatus != nil || store.log.contains("waiting to start: ")
        }
        #expect(store.exitStatus == nil, "the store stopped: \(store.log.suffix(800))")
        #expect(store.log.contains("waiting to start: cannot"), "\(store.log.suffix(800))")
        try holder.inDatabase { db in try db.execute(sql: "ROLLBACK") }
        let client = try broker.storeClient()
        try await waitUntil("the store to come online", within: 60) { (try? await client.status())?.isOnline == true && store.log.contains("online") }
        try await store.send(SIGTERM)
    }
}
