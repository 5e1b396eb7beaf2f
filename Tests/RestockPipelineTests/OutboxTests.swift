import Foundation
import GRDB
import RestockCore
import Testing

@testable import RestockPipeline

/// The outbox (``Outbox``) and the dead letters (``DeadLetters``) of the store's state, in memory.
@Suite("Outbox and dead letters")
struct OutboxTests {
    static func message(_ key: String, _ text: String = "m", retain: Bool = true) -> Publication {
        Publication(key: key, topic: "restock/apple/\(key)", payload: Array(text.utf8), retain: retain)
    }

    /// A batch of `count` alerts, as one outbox record.
    static func batch(_ first: Int, count: Int) -> Publication {
        var publication = Publication(key: "alert:\(first)+\(count)", topic: "", payload: [1, 2, 3], retain: false)
        publication.alertCount = count
        return publication
    }

    /// Commits `publications` as a batch of requests would; returns them with their places.
    static func commit(_ publications: [Publication], to queue: DatabaseQueue, outbox: Outbox) throws -> [CommittedPublication] {
        let committed = outbox.place(publications)
        var changes = StoreChanges()
        changes.publications = publications
        try StateWriter(queue).commit(changes, messages: committed)
        return committed
    }

    @Test("messages wait in the order committed, with their places, payloads and retain flags")
    func pendingInOrder() throws {
        let queue = try StateStorageTests.state()
        let outbox = try Outbox(queue)
        let committed = try Self.commit([Self.message("a", "first"), Self.message("b", "second", retain: false)], to: queue, outbox: outbox)
        #expect(committed.map(\.seq) == [1, 2])
        let pending = try outbox.pending(after: 0, limit: 10)
        #expect(pending == [
            PendingPublication(seq: 1, topic: "restock/apple/a", payload: Array("first".utf8), retain: true, alertCount: 0, sent: 0),
            PendingPublication(seq: 2, topic: "restock/apple/b", payload: Array("second".utf8), retain: false, alertCount: 0, sent: 0),
        ])
        #expect(try outbox.pending(after: 1, limit: 10).map(\.seq) == [2])
        #expect(try outbox.pending(after: 0, limit: 1).map(\.seq) == [1])
    }

    @Test("a retained topic keeps only its newest version waiting, within a commit and across commits")
    func newestVersionWins() throws {
        let queue = try StateStorageTests.state()
        let outbox = try Outbox(queue)
        _ = try Self.commit([Self.message("a", "v1"), Self.message("b"), Self.message("a", "v2")], to: queue, outbox: outbox)
        #expect(try outbox.pending(after: 0, limit: 10).map { "\($0.seq) \(String(decoding: $0.payload, as: UTF8.self))" } == ["2 m", "3 v2"])
        _ = try Self.commit([Self.message("a", "v3")], to: queue, outbox: outbox)
        // The acknowledgement of the version published before does not forget the newer one.
        try outbox.acknowledge(messages: [3], batches: [])
        #expect(try outbox.pending(after: 0, limit: 10).map(\.seq) == [2, 4])
    }

    @Test("acknowledged messages are forgotten, more than one statement's worth at once; the others stay")
    func acknowledgeMessages() throws {
        let queue = try StateStorageTests.state()
        let outbox = try Outbox(queue)
        let committed = try Self.commit((0..<1_201).map { Self.message("m\($0)") }, to: queue, outbox: outbox)
        try outbox.acknowledge(messages: committed.dropLast().map(\.seq), batches: [])
        #expect(try outbox.pending(after: 0, limit: 2_000).map(\.seq) == [1_201])
        #expect(try queue.read { db in try Outbox.messageCount(db) } == 1)
    }

    @Test("a batch records how many of its alerts are acknowledged, counts the rest, and is forgotten when all are")
    func acknowledgeBatches() throws {
        let queue = try StateStorageTests.state()
        let outbox = try Outbox(queue)
        let committed = try Self.commit([Self.batch(1, count: 5), Self.message("mirror"), Self.batch(6, count: 2)], to: queue, outbox: outbox)
        #expect(try queue.read { db in try Outbox.messageCount(db) } == 8)
        try outbox.acknowledge(messages: [committed[1].seq], batches: [(committed[0].seq, 3), (committed[2].seq, 2)])
        #expect(try outbox.pending(after: 0, limit: 10).map { [$0.seq, Int64($0.alertCount), Int64($0.sent)] } == [[1, 5, 3]])
        #expect(try queue.read { db in try Outbox.messageCount(db) } == 2)
        try outbox.acknowledge(messages: [], batches: [(committed[0].seq, 5)])
        #expect(try outbox.pending(after: 0, limit: 10).isEmpty)
    }

    @Test("places continue after every place given out before, also to messages since acknowledged")
    func placesNeverReused() throws {
        let queue = try StateStorageTests.state()
        let committed = try Self.commit([Self.message("a"), Self.message("b"), Self.message("c")], to: queue, outbox: try Outbox(queue))
        try Outbox(queue).acknowledge(messages: committed.map(\.seq), batches: [])
        #expect(try Outbox(queue).place([Self.message("d")]).map(\.seq) == [4])
    }

    @Test("a request set aside is kept with its payload, recorded as processed, and its error queued, in one transaction")
    func deadLetter() throws {
        let queue = try StateStorageTests.state()
        let outbox = try Outbox(queue)
        let letters = DeadLetters(queue)
        let request = JournaledRequest(seq: 9, topic: "restock/apple/subscribe/mallory", payload: [0xFF, 0x00], size: 70_000, retained: true)
        let error = outbox.place([Self.message("error", retain: false)])[0]
        try letters.setAside(request, error: error, at: Date(timeIntervalSince1970: 1_000))
        #expect(try letters.all() == [request])
        #expect(try queue.read { db in try DeadLetterRecord.fetchOne(db)?.failedAt } == 1_000)
        #expect(try outbox.pending(after: 0, limit: 10).map(\.seq) == [error.seq])
        #expect(try StateReader(queue).processedThrough() == 9)
        let earlier = JournaledRequest(seq: 4, topic: "restock/apple/subscribe/eve", payload: [1])
        try letters.setAside(earlier, error: outbox.place([Self.message("error2", retain: false)])[0], at: Date())
        #expect(try letters.all().map(\.seq) == [4, 9], "oldest first")
    }

    @Test("a dead letter that cannot be written leaves no error queued and nothing recorded as processed")
    func deadLetterAllOrNothing() throws {
        let queue = try StateStorageTests.state()
        try queue.write { db in try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'full'); END") }
        let outbox = try Outbox(queue)
        let request = JournaledRequest(seq: 3, topic: "t", payload: [1])
        #expect(throws: StorageError.self) {
            try DeadLetters(queue).setAside(request, error: outbox.place([Self.message("e")])[0], at: Date())
        }
        #expect(try DeadLetters(queue).all().isEmpty)
        #expect(try StateReader(queue).processedThrough() == 0)
    }
}
