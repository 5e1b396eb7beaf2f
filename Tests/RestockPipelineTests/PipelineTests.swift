import Foundation
import GRDB
import Logging
import RestockCore
import Testing

@testable import RestockPipeline

/// The store's pipeline stage by stage, in process and without a broker: the request log, the hand-off in
/// memory, and the applying stage's recovery at start-up.
@Suite("Pipeline")
struct PipelineTests {
    /// A data directory of its own, removed at the end.
    final class Directory {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID().uuidString)")
        deinit { try? FileManager.default.removeItem(at: url) }
    }

    /// The applying stage over `database`, with the hand-offs it reads and fills.
    struct Stage {
        let processor: RequestProcessor
        let requests: HandOff<JournaledRequest>
        let committed: HandOff<CommittedPublication>
        let store: Store

        init(_ database: StoreDatabase, trimEvery: Int = 2_048) throws {
            let (_, wakeup) = AsyncStream.makeStream(of: Void.self)
            requests = HandOff(capacity: 100, wakeup: wakeup)
            committed = HandOff(capacity: 10_000, wakeup: wakeup)
            store = try Store(id: apple, restoring: try database.loadSnapshot())
            processor = try RequestProcessor(
                store: store, topics: appleTopics, storage: database, requests: requests, committed: committed,
                logger: Logger(label: "test"), clock: { Date(timeIntervalSinceReferenceDate: 0) }, trimEvery: trimEvery)
        }

        /// Journals a subscribe request to `item` for each of `customers` and passes it on, as the network thread does,
        /// and syncs the log after each (unless `synced` is `false`: as a power cut would find the log before its sync).
        func journal(_ customers: [String], to item: String, in database: StoreDatabase, synced: Bool = true) throws {
            for who in customers {
                let request = PipelineTests.subscribe(who, item)
                requests.append(try database.journal(topic: request.topic, payload: request.payload))
                if synced { try database.syncJournal() }
            }
        }

        /// Everything committed and passed on so far.
        func taken() -> [CommittedPublication] {
            guard case .items(let items) = committed.take(upTo: .max) else { return [] }
            return items
        }
    }

    static func subscribe(_ who: String, _ item: String) -> (topic: String, payload: [UInt8]) {
        (appleTopics.subscribe(customer(who)), Array(#"{"sku":"\#(item)"}"#.utf8))
    }

    @Test("a request is journaled while another connection holds the store's write lock: the network thread never waits for a commit")
    func journalNeverWaitsForACommit() throws {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        // A long commit of the store's state, from another connection: it holds store.sqlite's write lock.
        var unsafe = Configuration()
        unsafe.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: directory.url.appendingPathComponent("store.sqlite").path, configuration: unsafe)
        try other.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        defer { try? other.inDatabase { db in try db.execute(sql: "ROLLBACK") } }
        let request = Self.subscribe("alice", "ipad")
        let journaled = try database.journal(topic: request.topic, payload: request.payload)
        #expect(journaled.seq == 1)
        #expect(try database.log.count(after: 0) == 1)
    }

    @Test("journaled requests pass in memory to the applying stage, are applied once, and committed messages pass on with their places")
    func requestsPassInMemory() throws {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        try stage.journal(["alice", "bob"], to: "ipad", in: database)
        #expect(try stage.processor.drainInbox() == 2)
        #expect(stage.store.watchers(of: sku("ipad")).count == 2)
        let messages = stage.taken()
        #expect(messages.map(\.publication.topic) == ["restock/apple/customers/alice/subscriptions", "restock/apple/customers/bob/subscriptions"])
        #expect(try database.pendingPublications(after: 0, limit: 10).map(\.seq) == messages.map(\.seq))
        #expect(try database.processedThrough() == 2)
        // Nothing waits in the log after the last request applied.
        #expect(try database.queueLengths().inbox == 0)
        // The same requests offered again (memory after a read of the log) are not applied twice.
        stage.requests.append(JournaledRequest(seq: 2, topic: Self.subscribe("carol", "ipad").topic, payload: Self.subscribe("carol", "ipad").payload))
        #expect(try stage.processor.drainInbox() == 0)
        #expect(stage.store.watchers(of: sku("ipad")).count == 2)
    }

    @Test("at start-up the applying stage reads what the log holds after the last request applied; a spill sends it back to the log")
    func recoveryAndSpill() throws {
        let directory = Directory()
        do {
            let database = try StoreDatabase(directory: directory.url, store: apple)
            for who in ["alice", "bob", "carol"] {
                let request = Self.subscribe(who, "ipad")
                try database.journal(topic: request.topic, payload: request.payload)
            }
        }
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database, trimEvery: 100)
        #expect(try stage.processor.drainInbox() == 3)
        // More than memory holds (100): the rest is read from the log, each request once.
        for index in 0..<250 {
            let request = Self.subscribe("c\(index)", "mac")
            stage.requests.append(try database.journal(topic: request.topic, payload: request.payload))
        }
        #expect(try stage.processor.drainInbox() == 250)
        #expect(stage.store.watchers(of: sku("mac")).count == 250)
        #expect(try database.processedThrough() == 253)
        // Trimmed every 100 requests applied: the log keeps fewer than 100, all of them applied.
        #expect(try database.log.count(after: 0) < 100)
        #expect(try database.queueLengths().inbox == 0)
    }

    /// A data directory with alice's, mallory's and bob's subscribe requests journaled (places 1…3), none applied.
    static func threeJournaled() throws -> Directory {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        for who in ["alice", "mallory", "bob"] {
            let request = Self.subscribe(who, "ipad")
            try database.journal(topic: request.topic, payload: request.payload)
        }
        return directory
    }

    @Test("a batch the store died applying is applied again one request at a time, each recorded alone as it begins")
    func crashedBatchRetriedAlone() throws {
        let directory = try Self.threeJournaled()
        do { try StoreDatabase(directory: directory.url, store: apple).beginAttempt(Attempt(first: 1, last: 3, suspectsThrough: 0)) }
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        #expect(try stage.processor.drainInbox() == 3)
        #expect(try database.lastAttempt()?.attempt == Attempt(first: 3, last: 3, suspectsThrough: 3))
        #expect(stage.store.watchers(of: sku("ipad")).count == 3)
        #expect(try database.deadLetters().isEmpty)
    }

    /// A data directory where, after a death in the batch 1…3, alice (1) was applied alone, then the store died
    /// applying mallory (2) alone: of a fault (`faulted`), or killed (`kills` times before).
    static func diedOnMallory(faulted: Bool, kills: Int = 0) throws -> Directory {
        let directory = try Self.threeJournaled()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        var aliceApplied = StoreChanges()
        aliceApplied.processedThrough = 1
        try database.commit(aliceApplied)
        try database.beginAttempt(Attempt(first: 2, last: 2, suspectsThrough: 3), kills: kills)
        if faulted {
            // What the fault handler writes when a trap hits while the request is applied.
            let file = try FileHandle(forWritingTo: directory.url.appendingPathComponent("attempt"))
            try file.seek(toOffset: 24)
            try file.write(contentsOf: [1])
            try file.close()
        }
        return directory
    }

    @Test("a suspect that crashed the store with a fault, applied alone, is set aside and its sender answered request-failed; the rest is applied")
    func suspectSetAside() throws {
        let directory = try Self.diedOnMallory(faulted: true)
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        #expect(try stage.processor.drainInbox() == 2)
        #expect(try database.deadLetters().map(\.seq) == [2])
        #expect(stage.store.watchers(of: sku("ipad")).map(\.customer) == [customer("bob")])
        let answered = stage.taken().map(\.publication)
        #expect(answered.first?.topic == "restock/apple/customers/mallory/errors")
        #expect(answered.first.map { String(decoding: $0.payload, as: UTF8.self).contains("request-failed") } == true)
        #expect(try database.processedThrough() == 3)
    }

    @Test("a store killed (no fault) while it applied a suspect alone tries it alone again: a kill is not the request's doing")
    func killedSuspectRetried() throws {
        let directory = try Self.diedOnMallory(faulted: false)
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        #expect(try stage.processor.drainInbox() == 2)
        #expect(try database.deadLetters().isEmpty)
        #expect(Set(stage.store.watchers(of: sku("ipad")).map(\.customer)) == [customer("mallory"), customer("bob")])
    }

    @Test("a suspect during which the store died alone four times without a fault is set aside anyway (a fault whose mark was lost must not loop)")
    func killedFourTimesSetAside() throws {
        let directory = try Self.diedOnMallory(faulted: false, kills: RequestProcessor.killsBeforeSetAside - 1)
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        #expect(try stage.processor.drainInbox() == 2)
        #expect(try database.deadLetters().map(\.seq) == [2])
    }

    @Test("requests journaled by an earlier version, in store.sqlite, are carried over to the log and applied once")
    func earlierInboxCarriedOver() throws {
        let directory = Directory()
        do { _ = try StoreDatabase(directory: directory.url, store: apple) }
        let old = try DatabaseQueue(path: directory.url.appendingPathComponent("store.sqlite").path)
        let request = Self.subscribe("alice", "ipad")
        try old.write { db in
            try db.execute(
                sql: "INSERT INTO inbox (seq, topic, payload, size, retained, attempts) VALUES (7, ?, ?, ?, 0, 0)",
                arguments: [request.topic, Data(request.payload), request.payload.count])
        }
        try old.close()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        #expect(try database.queueLengths().inbox == 1)
        let stage = try Stage(database)
        #expect(try stage.processor.drainInbox() == 1)
        #expect(stage.store.watchers(of: sku("ipad")).map(\.customer) == [customer("alice")])
        // The next request takes a place after it.
        #expect(try database.journal(topic: request.topic, payload: request.payload).seq == 8)
    }

    /// A data directory where alice's and bob's requests were journaled and applied (places 1 and 2).
    static func twoApplied() throws -> Directory {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        try stage.journal(["alice", "bob"], to: "ipad", in: database)
        #expect(try stage.processor.drainInbox() == 2)
        return directory
    }

    static func remove(_ file: String, from directory: Directory) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(at: directory.url.appendingPathComponent(file + suffix)) }
    }

    @Test(
        "a request log deleted, emptied or older than the store's state is refused with one line naming it, not started on",
        arguments: ["deleted", "emptied", "wal-lost"])
    func requestLogMissing(_ damage: String) throws {
        let directory = try Self.twoApplied()
        let log = directory.url.appendingPathComponent(RequestLog.fileName)
        switch damage {
        case "deleted": Self.remove(RequestLog.fileName, from: directory)
        case "emptied": try Data().write(to: log)
        default:
            // The log as an older copy: every entry, and the record of the places given out, gone.
            let queue = try DatabaseQueue(path: log.path)
            try queue.write { db in
                try db.execute(sql: "DELETE FROM request")
                try db.execute(sql: "UPDATE sqlite_sequence SET seq = 1 WHERE name = 'request'")
            }
            try queue.close()
        }
        do {
            _ = try StoreDatabase(directory: directory.url, store: apple)
            Issue.record("started on a \(damage) request log")
        } catch let error as RestockMQTTError {
            #expect(error.description.contains(log.path), "\(error)")
            #expect(!error.description.contains("\n"))
        }
    }

    @Test("a request log deleted before any of its requests was applied is refused too (found by the second outside trial: 5,000 lost)")
    func requestLogMissingBeforeAnyApplied() throws {
        let directory = try Self.threeJournaled()
        Self.remove(RequestLog.fileName, from: directory)
        #expect {
            _ = try StoreDatabase(directory: directory.url, store: apple)
        } throws: { error in
            "\(error)".contains("is not the one the store's state")
        }
        // Both files made anew together: an empty store starts.
        let fresh = Directory()
        _ = try StoreDatabase(directory: fresh.url, store: apple)
        _ = try StoreDatabase(directory: fresh.url, store: apple)
    }

    @Test("a store's state deleted beside a request log that holds requests is refused, not started empty")
    func stateMissing() throws {
        let directory = try Self.twoApplied()
        Self.remove("store.sqlite", from: directory)
        #expect {
            _ = try StoreDatabase(directory: directory.url, store: apple)
        } throws: { error in
            "\(error)".contains("store.sqlite is missing")
        }
    }

    @Test("the hand-off keeps order, and past its capacity drops new items and says so once")
    func handOffSpills() {
        let (_, wakeup) = AsyncStream.makeStream(of: Void.self)
        let handOff = HandOff<Int>(capacity: 3, wakeup: wakeup)
        handOff.append([1, 2])
        guard case .items(let first) = handOff.take(upTo: 1) else { Issue.record("spilled too early"); return }
        #expect(first == [1])
        handOff.append([3, 4, 5])  // 2, 3, 4, 5 do not fit in 3
        guard case .spilled = handOff.take(upTo: 10) else { Issue.record("no spill"); return }
        handOff.append(6)
        guard case .items(let after) = handOff.take(upTo: 10) else { Issue.record("spilled twice"); return }
        #expect(after == [6])
    }
}
