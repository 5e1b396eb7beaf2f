import Foundation
import GRDB
import LocalBroker
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing
import Deadlines
import Synchronization

/// `restock backup` (docs/operations.md, "Backup and restore").
@Suite("Backups", .timeLimit(.minutes(5)))
struct BackupTests {
    func restock(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, within: 60)
    }

    /// A data directory with three watches of store apple.
    func seeded() throws -> URL { try VersionTests().seeded() }

    @Test("backup refuses, in one line and writing nothing: a destination that is not empty, a directory that holds no store, no --to")
    func backupRefusals() async throws {
        let data = try seeded()
        let full = try temporaryDirectory()
        let nowhere = FileManager.default.temporaryDirectory.appendingPathComponent("none-\(UUID().uuidString)")
        defer { for url in [data, full] { try? FileManager.default.removeItem(at: url) } }
        try Data("mine".utf8).write(to: full.appendingPathComponent("notes.txt"))

        let notEmpty = try await restock(["backup", "--data", data.path, "--to", full.path])
        #expect(notEmpty.status == 1, "\(notEmpty.standardError)")
        #expect(notEmpty.standardError == "error: \(full.path) exists and is not an empty directory: give --to a new or empty directory\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: full.path) == ["notes.txt"])

        let empty = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: empty) }
        let noStore = try await restock(["backup", "--data", empty.path, "--to", nowhere.path])
        #expect(noStore.status == 1)
        #expect(noStore.standardError.hasPrefix("error: \(empty.path) holds no store's data") && noStore.standardError.split(separator: "\n").count == 1)

        let noDestination = try await restock(["backup", "--data", data.path])
        #expect(noDestination.status == 64 && noDestination.standardError.hasPrefix("error: Missing expected argument '--to"), "\(noDestination.standardError)")
        #expect(!FileManager.default.fileExists(atPath: nowhere.path), "something was written")
    }

    @Test("backups taken while thousands of requests are applied and the log trimmed are each a valid pair with every watch it had")
    func backupWhileBusy() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        // Requests go on, 2,000 at a time, until enough backups ran while they were applied (a loaded machine applies
        // them slower, and a fixed 20,000 left only 2 of 8 backups busy in CI). The log is trimmed every 2,048 applied
        // requests: several trims while the backups run.
        let enough = Atomic<Bool>(false)
        let sending = Task {
            var batch = 0
            while !enough.load(ordering: .relaxed), batch < 100 {
                try await Requests.publish(Requests.subscriptions(Requests.customers(2_000, prefix: "c\(batch)-"), to: "ipad"), to: broker.url)
                batch += 1
            }
        }
        var copies: [(url: URL, watches: Int)] = []
        defer { for copy in copies { try? FileManager.default.removeItem(at: copy.url) } }
        var (taken, busy) = (0, 0)
        while taken < 8 || busy < 3, taken < 40 {
            let destination = FileManager.default.temporaryDirectory.appendingPathComponent("backup-\(UUID().uuidString)")
            let watchesBefore = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).watches
            let result = try await restock(["backup", "--data", store.dataDirectory.path, "--to", destination.path])
            let watchesAfter = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).watches
            #expect(result.status == 0, "backup \(taken + 1): \(result.standardError)")
            guard result.status == 0 else { break }
            let copied = try StoreDatabase.queueLengths(readingOnly: destination).watches
            #expect((watchesBefore...watchesAfter).contains(copied), "\(watchesBefore) ≤ \(copied) ≤ \(watchesAfter)")
            #expect(result.standardOutput.contains(": \(copied) watches"), "\(result.standardOutput)")
            if watchesBefore != watchesAfter { busy += 1 }
            copies.append((destination, copied))
            taken += 1
            // Only the first 2 and the last are restored below; the others need not stay on disk.
            if copies.count > 3 { try? FileManager.default.removeItem(at: copies.remove(at: 2).url) }
        }
        enough.store(true, ordering: .relaxed)
        try await sending.value
        #expect(busy >= 3, "only \(busy) backups ran while requests were applied: this run proves little")
        #expect(store.exitStatus == nil)
        try await store.send(SIGTERM)

        // Each copy opens as a store's data directory: restock serve starts on it with the watches it holds.
        for copy in copies.prefix(2) + copies.suffix(1) {
            let restored = try StoreProcess(broker: broker, dataDirectory: copy.url)
            try await restored.start()
            // Requests the original left in its session on the broker may be applied on top.
            #expect(try StoreDatabase.queueLengths(readingOnly: copy.url).watches >= copy.watches)
            try await restored.send(SIGTERM)
        }
    }
}
