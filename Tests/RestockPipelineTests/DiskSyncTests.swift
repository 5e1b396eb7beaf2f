import CountedSyncs
import Deadlines
import Foundation
import GRDB
import Synchronization
import Testing

@testable import RestockPipeline

/// What the data directory puts on the disk, and when, as a power cut would find it (docs/contract.md, "Durability and
/// redelivery"): each file's syncs, counted by a SQLite VFS (Tests/CountedSyncs) that every connection opened after
/// it is installed goes through.
@Suite("Syncs to the disk")
struct DiskSyncTests {
    typealias Directory = PipelineTests.Directory
    typealias Stage = PipelineTests.Stage

    /// A data directory whose files are opened through the counting VFS.
    struct Counted {
        let directory = Directory()
        let database: StoreDatabase

        init() throws {
            #expect(counted_syncs_install() == 0)
            database = try StoreDatabase(directory: directory.url, store: apple)
        }

        /// How many times the write-ahead log of `file` (a file name in the directory) has been synced.
        func syncs(ofTheWALOf file: String) -> Int {
            let path = directory.url.resolvingSymlinksInPath().appendingPathComponent(file + "-wal").path
            return counted_syncs_of(path)
        }

        var log: Int { syncs(ofTheWALOf: RequestLog.fileName) }
        var state: Int { syncs(ofTheWALOf: DataDirectory.stateFileName) }
    }

    @Test("a batch of requests is written to the log at once and synced by the log's own call, which the network thread makes before it acknowledges them")
    func requestsSyncedByTheirOwnCall() throws {
        let counted = try Counted()
        for batch in 1...3 {
            let before = counted.log
            let requests = (0..<batch).map { index in
                let request = PipelineTests.subscribe("c\(batch)-\(index)", "ipad")
                return (topic: request.topic, payload: request.payload, size: request.payload.count, retained: false)
            }
            #expect(try counted.database.journal(batch: requests).count == batch)
            #expect(counted.log == before, "batch \(batch) was synced before it could be handed on")
            try counted.database.syncJournal()
            #expect(counted.log > before, "batch \(batch) was not synced")
        }
    }

    @Test("a power cut that takes the log's last batch before its sync, after the state applied it, leaves a store that starts and gives out places after it")
    func lostUnsyncedTailStarts() throws {
        let directory = Directory()
        var database: StoreDatabase? = try StoreDatabase(directory: directory.url, store: apple)
        var stage: Stage? = try Stage(database!)
        // Requests 1 through 3 synced; 4 and 5 written and applied, their sync not yet returned.
        try stage!.journal(["c1", "c2", "c3"], to: "ipad", in: database!)
        try stage!.journal(["c4", "c5"], to: "ipad", in: database!, synced: false)
        #expect(try stage!.processor.drainInbox() == 5)
        database!.releaseDirectory()
        (stage, database) = (nil, nil)
        // What the log would hold after the power cut: the unsynced requests gone, and the places SQLite had given them.
        try Self.cut(directory, logAfter: 3)

        let reopened = try StoreDatabase(directory: directory.url, store: apple)
        #expect(try reopened.processedThrough() == 5)
        #expect(reopened.openingWarnings.count == 1)
        #expect(reopened.openingWarnings.first?.contains("before requests 4 through 5 the state had applied") == true)
        // A new request comes after every place the state applied: not skipped as applied already.
        let next = PipelineTests.subscribe("c6", "ipad")
        #expect(try reopened.journal(topic: next.topic, payload: next.payload).seq == 6)
        #expect(try Stage(reopened).processor.drainInbox() == 1)
        #expect(try reopened.loadSnapshot().watches.count == 6)
    }

    @Test("a log that lost requests the state knew synced is still refused: it is older than the state")
    func lostSyncedRequestsRefused() throws {
        let directory = Directory()
        var database: StoreDatabase? = try StoreDatabase(directory: directory.url, store: apple)
        var stage: Stage? = try Stage(database!)
        try stage!.journal(["c1", "c2", "c3", "c4", "c5"], to: "ipad", in: database!)
        #expect(try stage!.processor.drainInbox() == 5)
        database!.releaseDirectory()
        (stage, database) = (nil, nil)
        try Self.cut(directory, logAfter: 3)
        #expect(throws: RestockMQTTError.self) { try StoreDatabase(directory: directory.url, store: apple) }
    }

    @Test("the state's commits go on while a checkpoint of its write-ahead log waits for the disk: checkpoints run on a thread of their own")
    func checkpointsOffThePipeline() async throws {
        let (counted, stage, wal) = try Self.holdingTheStateWALSyncs()
        defer { counted_syncs_release(wal) }
        // Enough commits for SQLite's automatic checkpoint (past 1,000 pages of log), which would sync in the commit.
        let applied = Mutex(0)
        let database = counted.database
        Thread {
            for index in 0..<1_500 {
                guard (try? stage.journal(["c\(index)"], to: "ipad", in: database)) != nil,
                    (try? stage.processor.drainInbox()) == 1
                else { return }
                applied.withLock { $0 += 1 }
            }
        }.start()
        try await waitUntil("1,500 commits while a checkpoint waits for its sync", within: 60) {
            applied.withLock { $0 } == 1_500 && counted_syncs_waiting(wal) > 0
        }
        counted_syncs_release(wal)
        try await waitUntil("the checkpoint's sync done", within: 10) { counted_syncs_of(wal) > 0 && counted_syncs_waiting(wal) == 0 }
        #expect(try database.loadSnapshot().watches.count == 1_500)
    }

    @Test("a truncating checkpoint (a forget's, the stop's) made while the checkpointer's own runs waits for it, where SQLite refused it at once with SQLITE_BUSY and the forgotten customer stayed in the write-ahead log (found by the storage's differential test under CI's load)")
    func truncatingCheckpointWaitsForThePassiveOne() async throws {
        let (counted, stage, wal) = try Self.holdingTheStateWALSyncs()
        defer { counted_syncs_release(wal) }
        // Enough commits for the checkpointer to start one, which then waits for its sync of the log.
        for index in 0..<StateCheckpointer.commitsPerCheckpoint {
            _ = try stage.journal(["c\(index)"], to: "ipad", in: counted.database)
            #expect(try stage.processor.drainInbox() == 1)
        }
        try await waitUntil("the checkpointer's checkpoint waiting for its sync", within: 30) { counted_syncs_waiting(wal) > 0 }
        final class Outcome: Sendable { let result = Mutex<Result<Void, any Error>?>(nil) }
        let outcome = Outcome(), database = counted.database
        Thread {
            let result = Result { try database.checkpoint() }
            outcome.result.withLock { $0 = result }
        }.start()
        // It waits while the other holds its sync: given a second to end, it does not (SQLite's refusal came at once).
        try? await waitUntil("the truncating checkpoint to end, which it must not yet", within: 1) { outcome.result.withLock { $0 } != nil }
        #expect(outcome.result.withLock { $0 } == nil, "the truncating checkpoint ended while another ran: \(String(describing: outcome.result.withLock { $0 }))")
        counted_syncs_release(wal)
        try await waitUntil("the truncating checkpoint done", within: 30) { outcome.result.withLock { $0 } != nil }
        #expect(throws: Never.self) { try outcome.result.withLock { $0 }?.get() }
        let size = try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int
        #expect(size == 0, "the state's write-ahead log is truncated")
    }

    /// A counted data directory and a stage over it, every sync of the state's write-ahead log held (the caller releases
    /// the path returned).
    static func holdingTheStateWALSyncs() throws -> (Counted, Stage, wal: String) {
        let counted = try Counted()
        let stage = try Stage(counted.database, trimEvery: 1_000_000)
        let wal = counted.directory.url.resolvingSymlinksInPath().appendingPathComponent(DataDirectory.stateFileName + "-wal").path
        counted_syncs_hold(wal)
        return (counted, stage, wal)
    }

    /// Takes the requests after `place` out of the directory's log, and the places SQLite gave out after it, with no store
    /// open on it: what the log holds after a power cut that took its last writes.
    static func cut(_ directory: Directory, logAfter place: Int64) throws {
        let log = try DatabaseQueue(path: directory.url.appendingPathComponent(RequestLog.fileName).path)
        try log.write { db in
            try db.execute(sql: "DELETE FROM request WHERE seq > ?", arguments: [place])
            try db.execute(sql: "UPDATE sqlite_sequence SET seq = ? WHERE name = 'request'", arguments: [place])
        }
        try log.close()
    }

    @Test("the state's commits do not wait for the disk, but the one after which the log is trimmed does, and the log keeps every request until then")
    func trimWaitsForADurableCommit() throws {
        let counted = try Counted()
        let stage = try Stage(counted.database, trimEvery: 4)
        var journaled = 0

        /// Journals and applies `count` more requests; returns how many times the state was synced meanwhile.
        func applyMore(_ count: Int) throws -> Int {
            let before = counted.state
            try stage.journal((journaled..<journaled + count).map { "c\($0)" }, to: "ipad", in: counted.database)
            journaled += count
            #expect(try stage.processor.drainInbox() == count)
            return counted.state - before
        }

        // Through request 2: below the trim's mark, nothing synced and nothing trimmed.
        #expect(try applyMore(2) == 0)
        #expect(try counted.database.journaledRequests(after: 0, limit: 100).count == 2)
        // Through request 5: past it, the commit is synced and then the log trimmed.
        #expect(try applyMore(3) >= 1)
        #expect(try counted.database.journaledRequests(after: 0, limit: 100).isEmpty)
        // The next commits are not synced again until the next mark (the connection is back to its own setting).
        #expect(try applyMore(1) == 0)
        #expect(try applyMore(1) == 0)
        #expect(try counted.database.journaledRequests(after: 0, limit: 100).map(\.seq) == [6, 7])
        #expect(try counted.database.processedThrough() == 7)
    }
}
