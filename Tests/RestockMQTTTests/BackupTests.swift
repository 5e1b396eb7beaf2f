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

    @Test("a file given as --data is called not a directory by backup and export, and a --to that is a link to an empty directory gets the copy there (they said 'holds no store's data' and 'Not a directory': found by an outside trial)")
    func backupPathKinds() async throws {
        let data = try seeded()
        let directory = try temporaryDirectory("restock-backup-kinds")
        defer { for url in [data, directory] { try? FileManager.default.removeItem(at: url) } }
        let file = directory.appendingPathComponent("file")
        try Data().write(to: file)
        for command in ["backup", "export"] {
            let refused = try await restock([command, "--data", file.path] + (command == "backup" ? ["--to", directory.appendingPathComponent("b").path] : []))
            #expect(refused.status == 1)
            #expect(refused.standardError == "error: \(file.path) is not a directory: give --data the store's data directory\n", "\(command): \(refused.standardError)")
        }
        let empty = directory.appendingPathComponent("empty"), link = directory.appendingPathComponent("link")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: empty.path)
        let made = try await restock(["backup", "--data", data.path, "--to", link.path])
        #expect(made.status == 0, "\(made.standardError)")
        #expect(try StoreDatabase.queueLengths(readingOnly: empty).watches == 3)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == empty.path, "the link is left as it was")
    }

    @Test("a --to named with 255 bytes is backed up; a name of 256 bytes, or a path longer than SQLite opens, is refused naming --to, with nothing made (found by an outside trial: 234-255 bytes were refused, naming the copy's folder beside --to, and a long path left its parents behind)")
    func backupNameLengths() async throws {
        let data = try seeded()
        let directory = try temporaryDirectory("restock-backup-names")
        defer { for url in [data, directory] { try? FileManager.default.removeItem(at: url) } }
        let longest = directory.appendingPathComponent(String(repeating: "d", count: 255))
        let made = try await restock(["backup", "--data", data.path, "--to", longest.path])
        #expect(made.status == 0, "\(made.standardError)")
        #expect(try StoreDatabase.queueLengths(readingOnly: longest).watches == 3)

        let tooLong = directory.appendingPathComponent(String(repeating: "é", count: 128))  // 256 bytes, 128 characters
        let refused = try await restock(["backup", "--data", data.path, "--to", tooLong.path])
        #expect(refused.status == 1)
        #expect(refused.standardError == "error: cannot write \(tooLong.path): File name too long\n", "\(refused.standardError)")

        let deep = directory.appendingPathComponent(String(repeating: "p", count: 200)).appendingPathComponent(String(repeating: "q", count: 200))
            .appendingPathComponent("copy")
        let long = try await restock(["backup", "--data", data.path, "--to", deep.path])
        #expect(long.status == 1)
        #expect(long.standardError.hasPrefix("error: cannot write \(deep.path): the path is \(deep.path.utf8.count) bytes long, and SQLite opens files only in a directory of at most "), "\(long.standardError)")
        #expect(long.standardError.split(separator: "\n").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [longest.lastPathComponent], "nothing else made")
    }

    @Test("a backup killed while it copies leaves nothing at --to that a store would start on, and the next backup to the same place clears what it left (found by an outside trial: a cut copy at --to started as an empty store)")
    func killedBackupLeavesNothing() async throws {
        let directory = try temporaryDirectory("restock-backup")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data"), copy = directory.appendingPathComponent("copy")
        let since = Date(timeIntervalSince1970: 1_800_000_000)
        let count = 200_000
        try StoreSeeding.write(
            try (1...count).map { Watch(customer: try CustomerID("c\($0)"), sku: try SKU("tv"), mode: .once, minQuantity: 1, position: UInt64($0), since: since) },
            into: data)
        let backup = Process()
        backup.executableURL = URL(fileURLWithPath: restockExecutable)
        backup.arguments = ["backup", "--data", data.path, "--to", copy.path]
        backup.standardOutput = FileHandle.nullDevice
        try backup.run()
        let staged = { @Sendable in (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.contains { $0.hasPrefix(".copy.restock-backup-") } == true }
        let copyPath = copy.path
        try await waitUntil("the backup to begin its copy", within: 60, pollEvery: .milliseconds(1)) {
            staged() || FileManager.default.fileExists(atPath: copyPath) || !backup.isRunning
        }
        kill(backup.processIdentifier, SIGKILL)
        backup.waitUntilExit()
        // Killed before its end: nothing at --to. Killed after its rename (a fast machine): the copy is whole.
        if FileManager.default.fileExists(atPath: copy.path) {
            let export = try await restock(["export", "--data", copy.path])
            #expect(export.standardOutput.split(separator: "\n").count == count, "a cut copy at --to: \(export.standardError)")
            return
        }
        #expect(staged(), "the copy in progress stays beside --to, under a name of its own")
        let again = try await restock(["backup", "--data", data.path, "--to", copy.path])
        #expect(again.status == 0, "\(again.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["copy", "data"])
    }

    @Test("backup refuses a --to inside the data directory by any path, a bind mount's too; takes --config as every command does; an empty --data or --to is a usage error")
    func backupInsideAndOptions() async throws {
        let data = try seeded()
        let directory = try temporaryDirectory("restock-backup")
        defer { for url in [data, directory] { try? FileManager.default.removeItem(at: url) } }
        let inside = try await restock(["backup", "--data", data.path, "--to", data.appendingPathComponent("sub").path])
        #expect(inside.status == 1 && inside.standardError.contains("is inside the data directory"), "\(inside.standardError)")
        if getuid() == 0 {  // a bind mount of the data directory: only root mounts
            let mounted = directory.appendingPathComponent("mounted")
            try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
            let mount = try await ChildProcess.run("/bin/mount", ["--bind", data.path, mounted.path], within: 30)
            if mount.status == 0 {
                let through = try await restock(["backup", "--data", data.path, "--to", mounted.appendingPathComponent("sub").path])
                _ = try await ChildProcess.run("/bin/umount", [mounted.path], within: 30)
                #expect(through.status == 1 && through.standardError.contains("is inside the data directory"), "\(through.standardError)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("sub").path))

        let config = directory.appendingPathComponent("restock.json")
        try Data(#"{"to": "\#(directory.appendingPathComponent("copy").path)"}"#.utf8).write(to: config)
        // An empty folder made for the copy keeps its mode.
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("copy"), withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
        let configured = try await restock(["backup", "--config", config.path, "--data", data.path])
        #expect(configured.status == 0, "\(configured.standardError)")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("copy/store.sqlite").path))
        #expect(try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("copy").path)[.posixPermissions] as? Int == 0o700)
        for (option, arguments) in [("--data", ["backup", "--data", "", "--to", "x"]), ("--to", ["backup", "--data", data.path, "--to", ""])] {
            let refused = try await restock(arguments)
            #expect(refused.status == 64 && refused.standardError == "error: \(option) is empty: " + (option == "--data" ? "give the store's data directory\n" : "give a new or empty directory for the copy\n"), "\(refused.standardError)")
        }
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
