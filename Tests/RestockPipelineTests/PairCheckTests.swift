import Foundation
import GRDB
import RestockCore
import Testing

@testable import RestockPipeline

/// The check that the store's state and the request log are two halves of one store (``PairCheck``), in memory:
/// each refusal, word for word, and the pairs it lets start.
@Suite("Pair check of the state and the request log")
struct PairCheckTests {
    static let statePath = "/data/store.sqlite"
    static let logPath = "/data/journal.sqlite"

    /// A state and a log in memory, named as in a data directory.
    struct Pair {
        let state: DatabaseQueue
        var log: RequestLog

        init() throws {
            state = try DatabaseQueue()
            try StateSchema.prepare(state)
            log = try Self.newLog()
        }

        static func newLog() throws -> RequestLog { try RequestLog(DatabaseQueue(), path: logPath) }

        @discardableResult
        func check(stateIsNew: Bool = false) throws -> ClosedRange<Int64>? {
            try PairCheck(log: log, meta: StoreMeta(state, path: statePath), state: StateReader(state, path: statePath))
                .run(stateIsNew: stateIsNew)
        }

        /// Journals `count` requests.
        func journal(_ count: Int) throws {
            for _ in 0..<count { _ = try log.append(topic: "t", payload: [1], size: 1, retained: false) }
        }

        /// Records the requests up to `seq` as applied by the state, and the log's place known synced then (`nil`: not
        /// recorded, as by an earlier version).
        func applied(through seq: Int64, logSynced: Int64? = nil) throws {
            var changes = StoreChanges()
            changes.processedThrough = seq
            try StateWriter(state).commit(changes, messages: [], journalSynced: logSynced)
        }
    }

    /// The refusal `body` throws: the file it names and its one line.
    static func refusal(_ body: () throws -> Void) -> (file: String, line: String)? {
        do {
            try body()
        } catch let error as RestockMQTTError {
            guard case .dataDirectoryDamaged(let file, _, let remedy) = error else { return nil }
            #expect(remedy == "restore both files from one backup, or remove both to start an empty store")
            return (file, error.description)
        } catch {
            Issue.record("refused with \(error)")
        }
        return nil
    }

    @Test("a new pair starts, records its log in the state, and starts again; a new state beside an empty log starts")
    func newPairStarts() throws {
        let pair = try Pair()
        try pair.check(stateIsNew: true)
        #expect(try pair.state.read { db in try MetaRecord.value(of: .log, in: db) } == pair.log.identity())
        try pair.journal(3)
        try pair.applied(through: 2)
        try pair.log.trim(through: 2)
        try pair.check()
    }

    @Test("a state that is new beside a log that has given out places is refused, naming the state")
    func newStateBesideUsedLog() throws {
        let pair = try Pair()
        try pair.journal(3)
        try pair.log.trim(through: 3)
        let refusal = Self.refusal { try pair.check(stateIsNew: true) }
        #expect(refusal?.file == Self.statePath)
        #expect(
            refusal?.line == "the store's state /data/store.sqlite is missing, empty or new, but the request log /data/journal.sqlite "
                + "beside it has given out places up to 3: the watches and stock those requests made would be lost; "
                + "restore both files from one backup, or remove both to start an empty store")
    }

    @Test("a log other than the one the state was written with is refused, naming the log")
    func anotherLog() throws {
        var pair = try Pair()
        try pair.check(stateIsNew: true)
        pair.log = try Pair.newLog()
        let refusal = Self.refusal { try pair.check() }
        #expect(refusal?.file == Self.logPath)
        #expect(
            refusal?.line == "the request log /data/journal.sqlite is not the one the store's state /data/store.sqlite was written with "
                + "(deleted, emptied or replaced): acknowledged requests it held may be lost; "
                + "restore both files from one backup, or remove both to start an empty store")
    }

    @Test("a log that ends before what the state has applied is refused, naming the log")
    func logOlderThanState() throws {
        let pair = try Pair()
        try pair.check(stateIsNew: true)
        try pair.journal(2)
        try pair.applied(through: 5)
        let refusal = Self.refusal { try pair.check() }
        #expect(refusal?.file == Self.logPath)
        #expect(
            refusal?.line == "the request log /data/journal.sqlite is older than the store's state /data/store.sqlite (requests up to 5 "
                + "applied, the log ends at 2): requests acknowledged since may be lost; "
                + "restore both files from one backup, or remove both to start an empty store")
    }

    @Test("a log that ends before what the state applied, but not before what the state knew synced, lost only unacknowledged requests: the pair starts and says which")
    func logLostItsUnsyncedTail() throws {
        let pair = try Pair()
        try pair.check(stateIsNew: true)
        try pair.journal(2)
        try pair.applied(through: 5, logSynced: 2)
        #expect(try pair.check() == 3...5)
        try pair.applied(through: 5, logSynced: 1)
        #expect(try pair.check() == 3...5)
        try pair.applied(through: 2, logSynced: 2)
        #expect(try pair.check() == nil)
        // The log lost a request the state knew synced: it is older than the state.
        try pair.applied(through: 5, logSynced: 3)
        #expect(Self.refusal { try pair.check() }?.file == Self.logPath)
    }

    @Test("a state that has not applied all the log has forgotten is refused, naming the state; one that has starts")
    func stateOlderThanLog() throws {
        let pair = try Pair()
        try pair.check(stateIsNew: true)
        try pair.journal(6)
        try pair.applied(through: 2)
        try pair.log.trim(through: 4)
        let refusal = Self.refusal { try pair.check() }
        #expect(refusal?.file == Self.statePath)
        #expect(
            refusal?.line == "the store's state /data/store.sqlite is older than its request log /data/journal.sqlite: it has applied "
                + "requests up to 2, but the log has already forgotten those up to 4, so the ones in between would be lost; "
                + "restore both files from one backup, or remove both to start an empty store")
        try pair.applied(through: 4)
        try pair.check()
    }

    @Test("the owner and the log are recorded once; the instance is replaced, returning the one before")
    func metaRecords() throws {
        let state = try StateStorageTests.state()
        let meta = StoreMeta(state)
        #expect(try meta.recordOnce(.store, "apple") == "apple")
        #expect(try meta.recordOnce(.store, "pear") == "apple")
        #expect(try meta.replace(.instance, with: "one") == nil)
        #expect(try meta.replace(.instance, with: "two") == "one")
        #expect(try state.read { db in try MetaRecord.value(of: .instance, in: db) } == "two")
    }
}
