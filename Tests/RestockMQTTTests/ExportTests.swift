import Deadlines
import Foundation
import GRDB
import LocalBroker
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing

/// `restock export` (docs/operations.md, "Exporting the watches"): JSON Lines of the watches, read while the store runs.
@Suite("Export of the watches", .timeLimit(.minutes(2)))
struct ExportTests {
    struct Line: Decodable, Equatable {
        var store, customer, sku, mode, since: String
        var minQuantity: Int
        var position: UInt64
        var expiresAt: String?
        var waiting: Bool
    }

    @Test("while the store runs, restock export writes every watch as one JSON line, as the store holds them, and changes nothing")
    func exportWhileRunning() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker)
        try await store.start()
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/+/subscriptions")
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", #"{"sku":"tv","mode":"every","minQuantity":2}"#)
        try await mosquittoPub(broker, "restock/apple/subscribe/bob", #"{"sku":"radio","expiresAt":"2999-01-01T00:00:00Z"}"#)
        try await watcher.wait(for: "both mirrors", within: 60) { $0.messages.count >= 2 }
        let before = try FileManager.default.contentsOfDirectory(atPath: store.dataDirectory.path).sorted()

        let result = try await ChildProcess.run(restockExecutable, ["export", "--data", store.dataDirectory.path], within: 60)
        #expect(result.status == 0, "\(result.standardError)")
        let lines = try result.standardOutput.split(separator: "\n").map { try JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
        let snapshot = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
        #expect(lines.map(\.customer) == snapshot.watches.sorted { $0.position < $1.position }.map(\.customer.rawValue))
        #expect(lines.map(\.customer) == ["alice", "bob"])
        #expect(lines[0].store == "apple" && lines[0].sku == "tv" && lines[0].mode == "every" && lines[0].minQuantity == 2 && lines[0].waiting)
        #expect(lines[1].expiresAt == "2999-01-01T00:00:00.000Z")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.dataDirectory.path).sorted() == before, "export wrote in the data directory")

        // The store went on: it takes a request after the export.
        try await mosquittoPub(broker, "restock/apple/subscribe/carol", "lamp")
        try await watcher.wait(for: "carol's mirror", within: 60) { $0.messages.contains { $0.topic.hasSuffix("/carol/subscriptions") } }

        let missing = try await ChildProcess.run(restockExecutable, ["export", "--data", "/nonexistent/restock"], within: 60)
        #expect(missing.status != 0)
        #expect(missing.standardError.split(separator: "\n").count == 1 && missing.standardError.contains("holds no store"), "\(missing.standardError)")
        try await store.send(SIGTERM)
    }

    @Test("rows that hold no valid watch are left out of the lines and named on stderr, the first 20, then how many in all; the valid ones are written")
    func leftOutRowsNamed() async throws {
        let directory = try temporaryDirectory("restock-export")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        let valid = try ["alice", "bob", "carol"].enumerated().map { index, name in
            Watch(customer: try CustomerID(name), sku: try SKU("tv"), mode: .once, minQuantity: 1, position: UInt64(index + 1), since: Date(timeIntervalSince1970: 1_800_000_000))
        }
        try StoreSeeding.write(valid, into: data)
        // Row 2's customer would forge a line of its own, colour the terminal, and run on for 5,000 characters.
        let forged = "bad id 2!\nwarning: forged\u{1B}[31m" + String(repeating: "x", count: 5_000)
        let damage = { (rows: ClosedRange<Int>) in
            let queue = try DatabaseQueue(path: data.appendingPathComponent("store.sqlite").path)
            try queue.write { db in
                for row in rows {
                    try db.execute(
                        sql: "INSERT INTO watch VALUES (?, 'tv', 'once', 1, ?, 0, 1, NULL)", arguments: [row == 2 ? forged : "bad id \(row)!", 900 + row])
                }
            }
        }

        try damage(1...2)
        let two = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path], within: 60)
        #expect(two.status == 0, "\(two.standardError)")
        #expect(try two.standardOutput.split(separator: "\n").map { try JSONDecoder().decode(Line.self, from: Data($0.utf8)).customer } == ["alice", "bob", "carol"])
        let named = two.standardError.split(separator: "\n")
        #expect(named.count == 2 && named.allSatisfy { $0.hasPrefix("warning: left out a row") }, "\(two.standardError)")
        #expect(named.first?.contains("bad id 1!") == true, "\(two.standardError)")
        // Quoted and escaped, and cut: the forged line and the escape stay inside row 2's line, which says its length.
        #expect(named.last?.contains(#""bad id 2!\nwarning: forged\u{1B}[31mxxx"#) == true, "\(two.standardError)")
        #expect(named.last?.contains("… (5030 bytes)") == true && (named.last?.count ?? .max) < 400, "\(two.standardError)")
        #expect(!two.standardError.contains("\u{1B}"))

        try damage(3...25)
        let output = directory.appendingPathComponent("watches.jsonl")
        let many = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path, "--to", output.path], within: 60)
        #expect(many.status == 0, "\(many.standardError)")
        #expect(try String(contentsOf: output, encoding: .utf8).split(separator: "\n").count == 3)
        let lines = many.standardError.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("warning: left out a row") }.count == 20, "\(many.standardError)")
        #expect(lines.contains("warning: left out 25 rows that hold no valid record in all"), "\(many.standardError)")
        #expect(lines.last?.hasPrefix("exported 3 watches of ") == true, "\(many.standardError)")
    }

    @Test("damaged on-hand and counter rows are named as the store names them at start; --to into the data directory is refused and changes nothing; a failed export leaves a file already at --to as it was")
    func outputGuarded() async throws {
        let directory = try temporaryDirectory("restock-export")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = try Self.aliceWatching(in: directory)
        let queue = try DatabaseQueue(path: data.appendingPathComponent("store.sqlite").path)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO inventory VALUES ('radio', 'lots')")
            try db.execute(sql: "UPDATE counter SET value = 'abc' WHERE name = 'nextAlertSequence'")
        }
        let damaged = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path], within: 60)
        #expect(damaged.status == 0, "\(damaged.standardError)")
        #expect(damaged.standardOutput.split(separator: "\n").count == 1)
        let named = damaged.standardError.split(separator: "\n")
        #expect(named.count == 2 && named.contains { $0.hasSuffix(#"inventory "radio", "lots""#) } && named.contains { $0.hasSuffix(#"counter "nextAlertSequence", "abc""#) },
            "\(damaged.standardError)")

        // Into the data directory, by any path: refused in one line, every file as it was.
        let files = { try FileManager.default.contentsOfDirectory(atPath: data.path).sorted().map { name in
            (name, try Data(contentsOf: data.appendingPathComponent(name)))
        } }
        let before = try files()
        for to in ["store.sqlite", "journal.sqlite", "new.jsonl"].map({ data.appendingPathComponent($0).path }) + ["\(data.path)/../data/store.sqlite"] {
            let refused = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path, "--to", to], within: 60)
            #expect(refused.status == 1 && refused.standardError.split(separator: "\n").count == 1, "\(refused.standardError)")
            #expect(refused.standardError.contains("inside the store's data directory"), "\(refused.standardError)")
        }
        let after = try files()
        #expect(after.map(\.0) == before.map(\.0) && zip(after, before).allSatisfy { $0.1 == $1.1 })

        // A failed export keeps a file already at --to, and leaves nothing beside it; a good one replaces it.
        let kept = directory.appendingPathComponent("watches.jsonl")
        try Data("precious\n".utf8).write(to: kept)
        let failed = try await ChildProcess.run(restockExecutable, ["export", "--data", directory.appendingPathComponent("none").path, "--to", kept.path], within: 60)
        #expect(failed.status == 1)
        #expect(try String(contentsOf: kept, encoding: .utf8) == "precious\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["data", "watches.jsonl"])
        // A file replaced keeps its mode (a private export stays private), and a symlink's target is written.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: kept.path)
        let link = directory.appendingPathComponent("link.jsonl")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: kept.lastPathComponent)
        let good = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path, "--to", link.path], within: 60)
        #expect(good.status == 0)
        #expect(try String(contentsOf: kept, encoding: .utf8).hasPrefix(#"{"customer":"alice""#))
        #expect(try FileManager.default.attributesOfItem(atPath: kept.path)[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == kept.lastPathComponent)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["data", "link.jsonl", "watches.jsonl"])
    }

    @Test("a write that fails past the first 64 KiB is named as the output's failure, not the store's; a device is written, never replaced")
    func writeFailureNamed() async throws {
        let directory = try temporaryDirectory("restock-export")
        defer { try? FileManager.default.removeItem(at: directory) }
        let since = Date(timeIntervalSince1970: 1_800_000_000)
        let watches = try (1...2_000).map { index in
            Watch(customer: try CustomerID("c\(index)"), sku: try SKU("tv"), mode: .once, minQuantity: 1, position: UInt64(index), since: since)
        }
        try StoreSeeding.write(watches, into: directory)
        let full = "/dev/full"
        let isDevice = { (try? FileManager.default.attributesOfItem(atPath: full)[.type] as? FileAttributeType) == .typeCharacterSpecial }
        try #require(isDevice(), "\(full) is not the device this test writes to")
        let failed = try await ChildProcess.run(restockExecutable, ["export", "--data", directory.path, "--to", full], within: 60)
        #expect(failed.status == 1)
        #expect(failed.standardError == "error: cannot write /dev/full: No space left on device\n", "\(failed.standardError)")
        #expect(isDevice(), "the export replaced \(full)")
    }

    @Test("a state of a newer version is refused, as the store refuses it; a path that holds a newline or an escape is named escaped, the reason on the same line (found by an outside trial: user_version 99 was exported, and a newline in --to cut the reason off)")
    func newerStateAndOddPathsRefused() async throws {
        let directory = try temporaryDirectory("restock-export")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = try Self.aliceWatching(in: directory)
        let odd = directory.appendingPathComponent("no\ndir\u{1B}[31m/x.jsonl").path
        let refused = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path, "--to", odd], within: 60)
        #expect(refused.status == 1)
        #expect(refused.standardError == "error: cannot write \"\(directory.path)/no\\ndir\\u{1B}[31m/x.jsonl\": No such file or directory\n", "\(refused.standardError)")
        let given = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path, "--to=\(odd)"], within: 60)
        #expect(given.standardError == refused.standardError)

        let queue = try DatabaseQueue(path: data.appendingPathComponent("store.sqlite").path)
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = 99") }
        let newer = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path], within: 60)
        #expect(newer.status == 1 && newer.standardOutput.isEmpty)
        #expect(newer.standardError.hasPrefix("error: \(data.path)/store.sqlite was written by a newer RestockAlerter (schema version 99;"), "\(newer.standardError)")
        #expect(newer.standardError.split(separator: "\n").count == 1)
    }

    @Test("--to through a bind mount of the data directory is refused; a dangling symlink has its target made, a loop of them is refused; --config is taken (found by an outside trial: a bind mount replaced the store's state)")
    func boundAndLinkedTargets() async throws {
        let directory = try temporaryDirectory("restock-export")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = try Self.aliceWatching(in: directory)
        if getuid() == 0 {  // only root mounts
            let mounted = directory.appendingPathComponent("mounted")
            try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
            if try await ChildProcess.run("/bin/mount", ["--bind", data.path, mounted.path], within: 30).status == 0 {
                let before = try Data(contentsOf: data.appendingPathComponent("store.sqlite"))
                let through = try await ChildProcess.run(
                    restockExecutable, ["export", "--data", data.path, "--to", mounted.appendingPathComponent("store.sqlite").path], within: 60)
                let given = try await ChildProcess.run(
                    restockExecutable, ["export", "--data", mounted.path, "--to", data.appendingPathComponent("x.jsonl").path], within: 60)
                _ = try await ChildProcess.run("/bin/umount", [mounted.path], within: 30)
                for refused in [through, given] {
                    #expect(refused.status == 1 && refused.standardError.contains("inside the store's data directory"), "\(refused.standardError)")
                }
                #expect(try Data(contentsOf: data.appendingPathComponent("store.sqlite")) == before)
            }
        }
        if getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {  // a user who may not read it
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: data.path)
            let denied = try await ChildProcess.run(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", restockExecutable, "export", "--data", data.path], within: 60)
            #expect(denied.status == 1 && denied.standardError == "error: cannot read \(data.path)/store.sqlite: Permission denied\n", "\(denied.standardError)")
        }
        let dangling = directory.appendingPathComponent("dangling.jsonl")
        try FileManager.default.createSymbolicLink(atPath: dangling.path, withDestinationPath: "made.jsonl")
        let made = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path, "--to", dangling.path], within: 60)
        #expect(made.status == 0, "\(made.standardError)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dangling.path) == "made.jsonl")
        #expect(try String(contentsOf: directory.appendingPathComponent("made.jsonl"), encoding: .utf8).hasPrefix(#"{"customer":"alice""#))
        let (one, two) = (directory.appendingPathComponent("one"), directory.appendingPathComponent("two"))
        try FileManager.default.createSymbolicLink(atPath: one.path, withDestinationPath: "two")
        try FileManager.default.createSymbolicLink(atPath: two.path, withDestinationPath: "one")
        let loop = try await ChildProcess.run(restockExecutable, ["export", "--data", data.path, "--to", one.path], within: 60)
        #expect(loop.status == 1 && loop.standardError == "error: cannot write \(one.path): Too many levels of symbolic links\n", "\(loop.standardError)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: one.path) == "two")

        let config = directory.appendingPathComponent("restock.json")
        try Data(#"{"data": "\#(data.path)"}"#.utf8).write(to: config)
        let configured = try await ChildProcess.run(restockExecutable, ["export", "--config", config.path], within: 60)
        #expect(configured.status == 0 && configured.standardOutput.hasPrefix(#"{"customer":"alice""#), "\(configured.standardError)")
    }

    @Test("the store's log keeps each entry on its line when the data directory's path holds a newline or an escape; a store id changed by hand in the state is named escaped (found by an outside trial: both reached the terminal raw)")
    func oddPathsInTheLog() async throws {
        let directory = try temporaryDirectory("restock-export")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = try Self.aliceWatching(in: directory)
        let queue = try DatabaseQueue(path: data.appendingPathComponent("store.sqlite").path)
        try await queue.write { db in try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('store', ?)", arguments: ["\u{1B}[31m\nx"]) }
        let broker = try await MosquittoBroker.start()
        let other = try await ChildProcess.run(restockExecutable, ["serve", "--broker", broker.url, "--data", data.path], within: 60)
        #expect(other.status == 1)
        #expect(other.standardError.hasSuffix(#"holds the state of a store whose id, "\u{1B}[31m\nx", is not a valid store id (changed by hand?): give this store a data directory of its own (--data)"# + "\n"),
            "\(other.standardError)")

        let odd = directory.appendingPathComponent("new\nline\u{1B}[31m")
        let store = try StoreProcess(broker: broker, dataDirectory: odd)
        try await store.start()
        try await store.send(SIGTERM)
        #expect(store.log.contains(#"keeps its state in \#(directory.path)/new\nline\u{1B}[31m"#), "\(store.log.prefix(2_000))")
        #expect(!store.log.contains("\u{1B}"))
    }

    /// A store's data directory, `data` in `directory`, that holds one watch: alice's of tv.
    static func aliceWatching(in directory: URL) throws -> URL {
        let data = directory.appendingPathComponent("data")
        try StoreSeeding.write(
            [Watch(customer: try CustomerID("alice"), sku: try SKU("tv"), mode: .once, minQuantity: 1, position: 1, since: Date(timeIntervalSince1970: 1_800_000_000))],
            into: data)
        return data
    }
}
