import CountedSyncs
import Foundation
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

    @Test("each batch of requests the network thread records is synced to the disk before it returns: before the broker hears the store has it")
    func requestsSyncedBeforeTheirAcknowledgement() throws {
        let counted = try Counted()
        for batch in 1...3 {
            let before = counted.log
            let requests = (0..<batch).map { index in
                let request = PipelineTests.subscribe("c\(batch)-\(index)", "ipad")
                return (topic: request.topic, payload: request.payload, size: request.payload.count, retained: false)
            }
            #expect(try counted.database.journal(batch: requests).count == batch)
            #expect(counted.log > before, "batch \(batch) was not synced")
        }
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
