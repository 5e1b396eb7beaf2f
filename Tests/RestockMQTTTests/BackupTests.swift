import Foundation
import GRDB
import LocalBroker
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing
import Deadlines

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
        let total = 20_000  // the log is trimmed every 2,048 applied requests: about ten trims while the backups run
        let sending = Task {
            try await Requests.publish(Requests.subscriptions(Requests.customers(total, prefix: "c"), to: "ipad"), to: broker.url)
        }
        var copies: [(url: URL, watches: Int)] = []
        defer { for copy in copies { try? FileManager.default.removeItem(at: copy.url) } }
        var busy = 0
        while copies.count < 8 {
            let destination = FileManager.default.temporaryDirectory.appendingPathComponent("backup-\(UUID().uuidString)")
            let watchesBefore = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).watches
            let result = try await restock(["backup", "--data", store.dataDirectory.path, "--to", destination.path])
            let watchesAfter = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).watches
            #expect(result.status == 0, "backup \(copies.count + 1): \(result.standardError)")
            guard result.status == 0 else { break }
            let copied = try StoreDatabase.queueLengths(readingOnly: destination).watches
            #expect((watchesBefore...watchesAfter).contains(copied), "\(watchesBefore) ≤ \(copied) ≤ \(watchesAfter)")
            #expect(result.standardOutput.contains(": \(copied) watches"), "\(result.standardOutput)")
            if watchesBefore != watchesAfter { busy += 1 }
            copies.append((destination, copied))
        }
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
