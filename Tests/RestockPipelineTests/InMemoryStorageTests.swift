import Foundation
import RestockCore
import SeededRandom
import StorageDifferential
import Testing

@testable import RestockPipeline

/// The memory backend (`Storage/Memory/`) against the SQLite one, its specification: seeded random sequences of
/// operations applied to both, every read of ``StoreStorage`` compared after each step; and the memory lease, which
/// fences an older owner's writes as SQLite's does.
@Suite("In-memory storage")
struct InMemoryStorageTests {
    typealias Directory = PipelineTests.Directory

    // MARK: The differential test (the generator: Tests/StorageDifferential)

    typealias Pair = StorageDifferential

    @Test("random sequences of operations leave SQLite and memory answering every read alike", arguments: [1, 2, 3, 0xC0FFEE] as [UInt64])
    func differential(seed: UInt64) throws {
        let pair = try Pair(seed: seed, other: InMemoryStorageBackend(volume: InMemoryVolume()))
        for index in 0..<120 {
            pair.step = ""
            try pair.randomStep()
            pair.step = "step \(index): \(pair.step)"
            pair.compare()
        }
        // The run made every kind of operation, and the state has something in each place the reads compare.
        let kinds: Set = ["journal", "commit", "acknowledge", "dead letter", "trim", "begin attempt", "fail attempt", "reopen"]
        #expect(pair.conflicts > 0, "no commit was refused")
        let missing = kinds.subtracting(pair.done)
        #expect(missing.isEmpty)
        let report = try pair.other.report(at: Pair.base, sku: nil)
        #expect(report.watches > 0 && report.alertsRaised.life > 0 && report.alertsAcknowledged.life > 0)
    }

    @Test("a run of saves that moves one watch off a position and another onto it is refused by both, as SQLite writes a run in key order (found by the differential test: memory took it in the order made)")
    func positionHandedOnInOneRun() throws {
        let pair = try Pair(seed: 11, other: InMemoryStorageBackend(volume: InMemoryVolume()))
        let (first, later, sku) = (Pair.customers[0], Pair.customers[3], Pair.skus[0])
        func watch(_ customer: CustomerID, at position: UInt64) -> Watch {
            Watch(customer: customer, sku: sku, mode: .every, minQuantity: 1, position: position, since: Pair.base)
        }
        var made = StoreChanges()
        made.save(watch(later, at: 1))
        made.save(watch(first, at: 2))
        made.appliedAt = Pair.base
        #expect(pair.both("commit") { try $0.commit(made) } != nil)
        // Made in this order, `later` leaves position 1 before `first` takes it; in key order, `first` comes first.
        var moved = StoreChanges()
        moved.save(watch(later, at: 3))
        moved.save(watch(first, at: 1))
        moved.appliedAt = Pair.base
        #expect(pair.both("moving commit") { try $0.commit(moved) } == nil)
        pair.compare()
        #expect(try pair.other.loadSnapshotReportingSkipped().snapshot.watches.map(\.position).sorted() == [1, 2])
    }

    @Test("a batch of alerts partly acknowledged counts what is left, and the figures count what was newly acknowledged")
    func partlyAcknowledgedBatch() throws {
        let pair = try Pair(seed: 7, other: InMemoryStorageBackend(volume: InMemoryVolume()))
        let entries = (1...4).map { AlertBatch.Entry(sequence: UInt64($0), customer: Pair.customers[$0], position: UInt64($0)) }
        var changes = StoreChanges()
        changes.publications = [
            Publication(batch: AlertBatch(store: apple, sku: Pair.skus[0], quantity: 3, at: Pair.base, epoch: nil, entries: entries))
        ]
        changes.alertsRaised = [Pair.skus[0]: 4]
        changes.appliedAt = Date()
        let placed = pair.both("commit") { try $0.commit(changes) }
        let seq = try #require(placed?.other.first?.seq)
        pair.both("acknowledge 1") { try $0.acknowledge(messages: [], batches: [(seq: seq, sent: 1)]) }
        pair.both("acknowledge 3") { try $0.acknowledge(messages: [], batches: [(seq: seq, sent: 3)]) }
        pair.compare()
        #expect(try pair.other.outboxDepth() == 1)
        #expect(try pair.other.pendingPublications(after: 0, limit: 9).map(\.sent) == [3])
        #expect(try pair.other.report(at: Date(), sku: nil).alertsAcknowledged.life == 3)
        pair.both("acknowledge all") { try $0.acknowledge(messages: [], batches: [(seq: seq, sent: 4)]) }
        #expect(try pair.other.outboxDepth() == 0)
        pair.compare()
    }

    @Test("journal places rise and are never given twice, even after a trim and a restart")
    func journalPlaces() throws {
        let backend = InMemoryStorageBackend()
        let first = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        let request = (topic: appleTopics.subscribe(Pair.customers[0]), payload: [UInt8]("{}".utf8), size: 2, retained: false)
        #expect(try first.journal(batch: [request, request]).map(\.seq) == [1, 2])
        try first.trimJournal(through: 2)
        #expect(try first.journal(batch: [request]).map(\.seq) == [3])
        try first.trimJournal(through: 3)
        first.ownership.release()
        first.releaseDirectory()
        let second = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        #expect(try second.journal(batch: [request]).map(\.seq) == [4])
        #expect(try second.journaledRequests(after: 0, limit: 9).map(\.seq) == [4])
    }

    // MARK: The memory lease

    static func journalOne(_ storage: any StoreStorage) throws -> [JournaledRequest] {
        try storage.journal(batch: [(topic: appleTopics.subscribe(Pair.customers[0]), payload: [UInt8]("{}".utf8), size: 2, retained: false)])
    }

    @Test("a second normal start is refused while the first holds the volume; once it lets it go, one opens at a higher epoch")
    func exclusiveOpen() throws {
        let backend = InMemoryStorageBackend()
        let first = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        #expect(backend.volume.lease == (1, "aaaaaaaaaaaa"))
        #expect(throws: RestockMQTTError.dataDirectoryInUse(backend.location)) {
            _ = try backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
        }
        #expect(backend.volume.lease.epoch == 1, "a refused start takes nothing")
        #expect(throws: RestockMQTTError.dataDirectoryOfAnotherStore(backend.location, owner: "apple")) {
            _ = try backend.open(for: try StoreID("pear"), claim: .takeover(instance: "bbbbbbbbbbbb", StandbyTakeover(hold: nil, seen: nil)), now: Date())
        }
        _ = try Self.journalOne(first)
        first.ownership.release()
        #expect(backend.volume.isInUse)
        first.releaseDirectory()
        #expect(!backend.volume.isInUse)
        #expect(backend.volume.lease == (1, ""))
        let second = try backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
        #expect(backend.volume.lease == (2, "bbbbbbbbbbbb"))
        #expect(try second.journaledRequests(after: 0, limit: 9).count == 1, "the state outlives the storage")
        try second.ownership.check()
        _ = try Self.journalOne(second)
    }

    @Test("after a takeover every write of the older owner throws leaseLost, naming the new one, and changes nothing")
    func takeoverFencesTheOlderOwner() throws {
        let backend = InMemoryStorageBackend()
        let old = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        let journaled = try Self.journalOne(old)
        var changes = StoreChanges()
        changes.save(Watch(customer: Pair.customers[0], sku: Pair.skus[0], mode: .once, minQuantity: 1, position: 1, since: Pair.base))
        changes.publications = [Publication(key: "k", topic: "t", payload: [1], retain: false)]
        let placed = try old.commit(changes)
        let new = try backend.open(for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", StandbyTakeover(hold: nil, seen: nil)), now: Date())
        #expect(backend.volume.lease == (2, "bbbbbbbbbbbb"))
        let before = backend.volume.snapshot()
        let queues = backend.volume.queueLengths()
        let error = Publication(key: "e", topic: "t", payload: [2], retain: false)
        let writes: [(String, () throws -> Void)] = [
            ("journal", { _ = try Self.journalOne(old) }),
            ("commit", { _ = try old.commit(changes) }),
            ("acknowledge", { try old.acknowledge(messages: placed.map(\.seq), batches: []) }),
            ("dead letter", { _ = try old.deadLetter(journaled[0], error: error, reason: "r", at: Date()) }),
            ("trim", { try old.trimJournal(through: 1) }),
            ("probe", { try old.probeJournal() }),
            ("renew", { try old.ownership.renew(at: Date()) }),
            ("check", { try old.ownership.check() }),
        ]
        for (what, write) in writes {
            do {
                try write()
                Issue.record("\(what): an owner whose lease was taken over wrote")
            } catch let error as StorageError {
                #expect(error.kind == .leaseLost, "\(what): \(error)")
                #expect(error.leaseLost == StorageError.LeaseLost(owner: "bbbbbbbbbbbb", epoch: 2), "\(what)")
            } catch {
                Issue.record("\(what): refused for another reason: \(error)")
            }
        }
        #expect(backend.volume.snapshot() == before)
        #expect(backend.volume.queueLengths() == queues)
        #expect(try new.deadLetterList().isEmpty)
        #expect(try new.journaledRequests(after: 0, limit: 9) == journaled)
        old.ownership.release()
        #expect(backend.volume.lease == (2, "bbbbbbbbbbbb"), "a lost lease is not released")
        // The new owner writes.
        _ = try new.commit(changes)
        try new.ownership.renew(at: Date())
    }
}
