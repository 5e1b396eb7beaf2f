import Foundation
import GRDB
import RestockCore
import Testing

@testable import RestockPipeline

/// What the data directory's accidents do to the pipeline, in process: a full disk is an error that may pass (the
/// applying stage keeps its changes and commits them again), and a store.sqlite that is empty, new or older than
/// its request log is refused with one line (docs/contract.md, "Durability and redelivery").
@Suite("Storage faults")
struct StorageFaultTests {
    typealias Directory = PipelineTests.Directory
    typealias Stage = PipelineTests.Stage

    /// Journals and applies subscribe requests of `customers` to `item`, trimming the log every 4 requests.
    static func applied(_ customers: [String], to item: String, in directory: Directory) throws {
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database, trimEvery: 4)
        try stage.journal(customers, to: item, in: database)
        #expect(try stage.processor.drainInbox() == customers.count)
    }

    static func removeState(_ directory: Directory) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(at: directory.url.appendingPathComponent("store.sqlite" + suffix)) }
    }

    static func expectRefusalNaming(_ file: String, in directory: Directory, saying phrases: String...) {
        let path = directory.url.appendingPathComponent(file).path
        do {
            _ = try StoreDatabase(directory: directory.url, store: apple)
            Issue.record("started on a data directory whose \(file) cannot be the one its log continues")
        } catch let error as RestockMQTTError {
            guard case .dataDirectoryDamaged(let named, _, _) = error else {
                Issue.record("refused for another reason: \(error)")
                return
            }
            #expect(named == path)
            #expect(phrases.contains { error.description.contains($0) }, "\(error)")
            #expect(error.description.contains("restore both files from one backup"), "\(error)")
            #expect(!error.description.contains("\n"))
        } catch {
            Issue.record("refused with \(error)")
        }
    }

    @Test("a store.sqlite emptied to 0 bytes beside a request log that has trimmed requests is refused, not started with the log's tail")
    func emptiedStateRefused() throws {
        let directory = Directory()
        try Self.applied((0..<10).map { "c\($0)" }, to: "ipad", in: directory)
        Self.removeState(directory)
        try Data().write(to: directory.url.appendingPathComponent("store.sqlite"))
        Self.expectRefusalNaming("store.sqlite", in: directory, saying: "is missing, empty or new")
    }

    @Test(
        "a store.sqlite older than its request log (a copy from before, or the file copied without its -wal) is refused",
        arguments: ["older copy", "without -wal"])
    func olderStateRefused(_ how: String) throws {
        let directory = Directory()
        let copy = Directory()
        try FileManager.default.createDirectory(at: copy.url, withIntermediateDirectories: true)
        let state = directory.url.appendingPathComponent("store.sqlite")
        do {
            let database = try StoreDatabase(directory: directory.url, store: apple)
            let stage = try Stage(database, trimEvery: 4)
            try stage.journal(["alice", "bob"], to: "ipad", in: database)
            #expect(try stage.processor.drainInbox() == 2)
            if how == "older copy" {
                // A consistent copy of the state as it was: main file and write-ahead log together.
                for suffix in ["", "-wal"] {
                    try FileManager.default.copyItem(at: URL(fileURLWithPath: state.path + suffix), to: copy.url.appendingPathComponent("store.sqlite" + suffix))
                }
            }
            try stage.journal((0..<10).map { "c\($0)" }, to: "mac", in: database)
            #expect(try stage.processor.drainInbox() == 10)
            if how == "without -wal" {
                // Only the main file: what was committed since the last checkpoint is in the -wal, not in it.
                try FileManager.default.copyItem(at: state, to: copy.url.appendingPathComponent("store.sqlite"))
            }
        }
        Self.removeState(directory)
        for suffix in ["", "-wal"] {
            let saved = copy.url.appendingPathComponent("store.sqlite" + suffix)
            if FileManager.default.fileExists(atPath: saved.path) {
                try FileManager.default.copyItem(at: saved, to: URL(fileURLWithPath: state.path + suffix))
            }
        }
        // Without its -wal the main file may hold no table yet (never checkpointed): then it reads as new.
        Self.expectRefusalNaming("store.sqlite", in: directory, saying: "is older than its request log", "is missing, empty or new")
    }

    @Test("an older store.sqlite beside a log that still holds every request after it is not refused: the log applies them again")
    func olderStateBesideUntrimmedLogStarts() throws {
        let directory = Directory()
        let copy = Directory()
        try FileManager.default.createDirectory(at: copy.url, withIntermediateDirectories: true)
        let state = directory.url.appendingPathComponent("store.sqlite")
        do {
            let database = try StoreDatabase(directory: directory.url, store: apple)
            let stage = try Stage(database, trimEvery: 1_000)
            try stage.journal(["alice", "bob"], to: "ipad", in: database)
            #expect(try stage.processor.drainInbox() == 2)
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(at: URL(fileURLWithPath: state.path + suffix), to: copy.url.appendingPathComponent("store.sqlite" + suffix))
            }
            try stage.journal(["carol", "dave"], to: "ipad", in: database)
            #expect(try stage.processor.drainInbox() == 2)
        }
        Self.removeState(directory)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(at: copy.url.appendingPathComponent("store.sqlite" + suffix), to: URL(fileURLWithPath: state.path + suffix))
        }
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        #expect(try stage.processor.drainInbox() == 2)
        #expect(stage.store.watchers(of: sku("ipad")).map(\.customer.rawValue) == ["alice", "bob", "carol", "dave"])
    }

    @Test("a commit that finds the disk full is kept: the stage throws an error that may pass, and commits the same changes once there is room")
    func fullDiskCommitKept() throws {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        let stage = try Stage(database)
        try stage.journal(["alice"], to: "ipad", in: database)
        #expect(try stage.processor.drainInbox() == 1)
        _ = stage.taken()
        // The state may not grow: the next commit needs pages it cannot have.
        try database.limitSize(toPages: try database.pageCount())
        let many = (0..<300).map { "customer-with-a-long-name-\($0)" }
        try stage.journal(many, to: "mac", in: database)
        do {
            try stage.processor.drainInbox()
            Issue.record("committed on a full disk")
        } catch let error as StorageError {
            #expect(error.isDiskFull && error.isRetriable, "\(error)")
            #expect(error.path.hasSuffix("store.sqlite"))
            #expect(error.description.contains("the disk is full"), "\(error)")
        }
        #expect(try database.processedThrough() == 1, "nothing of the failed batch is recorded applied")
        #expect(stage.taken().isEmpty, "nothing of the failed batch is published")
        // Still full: it throws again, and applies nothing twice.
        #expect(throws: StorageError.self) { try stage.processor.drainInbox() }
        try database.limitSize(toPages: nil)
        try stage.processor.drainInbox()
        #expect(try database.processedThrough() == 301)
        #expect(stage.store.watchers(of: sku("mac")).count == 300)
        let mirrors = stage.taken().map(\.publication.topic)
        #expect(mirrors.count == 300 && Set(mirrors).count == 300, "each mirror once: \(mirrors.count)")
        #expect(try database.loadSnapshot().watches.count == 301)
    }

    @Test("a request log that cannot grow refuses the append with an error that may pass; its probe fails until there is room")
    func fullDiskJournalRefused() throws {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple)
        try database.log.probe()
        try database.log.limitSize(toPages: try database.log.pageCount())
        let big = Array(repeating: UInt8(ascii: "x"), count: 4_000)
        var refused: StorageError?
        for _ in 0..<50 where refused == nil {
            do {
                try database.journal(topic: "restock/apple/subscribe/alice", payload: big)
            } catch let error as StorageError {
                refused = error
            }
        }
        let error = try #require(refused, "the log took 200 KB without growing")
        #expect(error.isRetriable && error.isDiskFull)
        #expect(error.path.hasSuffix("journal.sqlite"))
        #expect(throws: StorageError.self) { try database.log.probe() }
        try database.log.limitSize(toPages: nil)
        try database.log.probe()
    }
}
