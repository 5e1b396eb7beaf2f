import Foundation
import GRDB
import Testing

@testable import RestockPipeline

/// The request log (``RequestLog``) and the carrying over of an earlier version's inbox (``EarlierInbox``), in memory.
@Suite("Request log")
struct RequestLogTests {
    static func log() throws -> RequestLog { try RequestLog(DatabaseQueue(), path: "/data/journal.sqlite") }

    @Test("requests get places in the order appended, and read back after a place, up to a limit")
    func appendAndRead() throws {
        let log = try Self.log()
        let places = try (0..<5).map { try log.append(topic: "t\($0)", payload: [UInt8($0)], size: 100 + $0, retained: $0 == 4) }
        #expect(places == [1, 2, 3, 4, 5])
        #expect(try log.requests(after: 2, limit: 2) == [
            JournaledRequest(seq: 3, topic: "t2", payload: [2], size: 102),
            JournaledRequest(seq: 4, topic: "t3", payload: [3], size: 103),
        ])
        #expect(try log.requests(after: 4, limit: 10) == [JournaledRequest(seq: 5, topic: "t4", payload: [4], size: 104, retained: true)])
        #expect(try log.count(after: 1) == 4)
    }

    @Test("a trim forgets what the state has applied; places are never given out twice")
    func trimKeepsPlaces() throws {
        let log = try Self.log()
        for _ in 0..<4 { _ = try log.append(topic: "t", payload: [], size: 0, retained: false) }
        #expect(try log.forgottenThrough() == 0)
        try log.trim(through: 3)
        #expect(try log.count(after: 0) == 1)
        #expect(try log.forgottenThrough() == 3)
        try log.trim(through: 4)
        #expect(try log.lastPlace() == 4)
        #expect(try log.forgottenThrough() == 4)
        #expect(try log.append(topic: "t", payload: [], size: 0, retained: false) == 5)
    }

    @Test("each log has an identity of its own, which stays")
    func identity() throws {
        let queue = try DatabaseQueue()
        let first = try RequestLog(queue).identity()
        #expect(!first.isEmpty)
        #expect(try RequestLog(queue).identity() == first)
        #expect(try Self.log().identity() != first)
    }

    @Test("an earlier version's inbox moves to the log with its places; new places come after it and after what was applied")
    func earlierInboxMoves() throws {
        let state = try StateStorageTests.state()
        try state.write { db in
            try db.execute(sql: "INSERT INTO inbox (seq, topic, payload, size, retained) VALUES (7, 'a', x'01', 9, 1), (8, 'b', x'02', 0, 0)")
        }
        let log = try Self.log()
        try EarlierInbox(state).move(to: log, applied: 6)
        #expect(try log.requests(after: 0, limit: 10) == [
            JournaledRequest(seq: 7, topic: "a", payload: [1], size: 9, retained: true), JournaledRequest(seq: 8, topic: "b", payload: [2]),
        ])
        #expect(try state.read { db in try EarlierInboxRecord.fetchCount(db) } == 0)
        #expect(try log.append(topic: "c", payload: [], size: 0, retained: false) == 9)

        let empty = try Self.log()
        try EarlierInbox(state).move(to: empty, applied: 40)
        #expect(try empty.append(topic: "d", payload: [], size: 0, retained: false) == 41, "never a place already applied")
    }

    @Test("an append that cannot be written fails as a StorageError naming the log, and may pass")
    func appendFailureNamed() throws {
        let log = try Self.log()
        _ = try log.append(topic: "t", payload: [], size: 0, retained: false)
        try log.limitSize(toPages: try log.pageCount())
        do {
            for _ in 0..<100 { _ = try log.append(topic: "t", payload: Array(repeating: 7, count: 4_000), size: 4_000, retained: false) }
            Issue.record("the log grew past its limit")
        } catch {
            #expect(error.path == "/data/journal.sqlite")
            #expect(error.isDiskFull && error.isRetriable, "\(error)")
        }
    }
}
