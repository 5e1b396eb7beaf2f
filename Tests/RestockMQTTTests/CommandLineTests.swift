import Foundation
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing
import Deadlines
import LocalBroker

/// The `restock` tool as a user runs it.
@Suite("The restock command line", .timeLimit(.minutes(3)))
struct CommandLineTests {
    func restock(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, within: 60)
    }

    @Test(
        "odd values of serve's limits are one line and exit 64, before anything is opened",
        arguments: [
            ["--customer-rate", "0x10"], ["--customer-rate", "inf"], ["--customer-rate", "-1"], ["--customer-rate", "1e999"],
            ["--customer-rate", "0"], ["--customer-burst", "0"], ["--max-watches-per-customer", "0"],
            ["--max-watches-per-customer", "1000001"], ["--log-level", "loud"], ["--log-format", "xml"],
            ["--max-watches", "0"], ["--max-watches", "1000000001"], ["--max-watches", "-5"], ["--max-watches", "1e6"], ["--max-watches", "none"],
        ])
    func oddLimits(_ option: [String]) async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("never-\(UUID().uuidString)")
        let result = try await restock(["serve", "--broker", "mqtt://127.0.0.1:1", "--data", data.path] + option)
        #expect(result.status == 64, "\(option): \(result.standardError)")
        #expect(result.standardError.hasPrefix("error: \(option[0])") && result.standardError.split(separator: "\n").count <= 3, "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: data.path), "the data directory was made")
    }

    @Test("the demo runs to completion with its own private broker", arguments: ["5", "3.1.1"])
    func demo(mqttVersion: String) async throws {
        let result = try await restock(["demo", "--mqtt-version", mqttVersion])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("Started a private mosquitto on mqtt://127.0.0.1:"))
        #expect(result.standardOutput.contains("🔔 alice got an alert"))
        #expect(result.standardOutput.contains("Every alert arrived, and none twice."))
    }

    @Test("the demo on a broker with a real store apple uses a store of its own, leaves apple alone and cleans up after itself")
    func demoBesideARealStore() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let client = try broker.storeClient()
        try await client.subscribe(try CustomerID("alice"), to: try SKU("ipad"), wait: 60)
        let everything = try await TopicWatcher(broker: broker, filter: "restock/apple/#")
        try await everything.wait(for: "apple's retained mirror") { $0.messages.contains { $0.topic.hasSuffix("alice/subscriptions") } }
        // The status is refreshed every 2 s (the heartbeat); anything else on apple's topics that differs from what the
        // topic held would be the demo's doing. The real store may publish its retained topics again, unchanged (it
        // heals after another instance's connection ends: a refused start's, in one CI run in several).
        func appleMessages() -> [String] {
            var held: [String: String] = [:]
            var changes: [String] = []
            for (topic, payload) in everything.messages where topic != "restock/apple/status" {
                if held[topic] != payload { changes.append(topic) }
                held[topic] = payload
            }
            return changes
        }
        let appleBefore = appleMessages().count

        let demo = try await restock(["demo", "--broker", broker.url])
        #expect(demo.status == 0, "\(demo.standardError)")
        #expect(demo.standardOutput.contains("Every alert arrived, and none twice."))
        let demoStore = try #require(demo.standardOutput.firstMatch(of: /Store "(demo-[a-z0-9]+)" is online/)?.output.1)
        #expect(appleMessages().count == appleBefore, "the demo wrote to store apple: \(appleMessages().dropFirst(appleBefore))")
        #expect(store.exitStatus == nil && store.log.components(separatedBy: "broker connection:").count == 1, "the real store lost its connection")
        #expect(try await client.watching(try CustomerID("alice"))?.watching.map(\.sku) == ["ipad"])

        // Nothing of the demo's store is left retained.
        let late = try await TopicWatcher(broker: broker, filter: "restock/\(demoStore)/#")
        try await mosquittoPub(broker, "restock/\(demoStore)/marker", "end")
        try await late.wait(for: "the marker") { $0.messages.contains { $0.topic.hasSuffix("/marker") } }
        #expect(late.messages.filter { !$0.topic.hasSuffix("/marker") }.isEmpty, "\(late.messages.map(\.topic))")

        // Told to use store apple, while apple is live: the demo's store refuses, and the demo stops with that
        // error, having changed nothing of the real store's.
        let named = try await restock(["demo", "--broker", broker.url, "--store", "apple"])
        #expect(named.status != 0)
        #expect(named.standardError.contains("store apple is already running on this broker"), "\(named.standardError)")
        #expect(appleMessages().count == appleBefore, "the demo wrote to store apple: \(appleMessages().dropFirst(appleBefore))")
        #expect(store.exitStatus == nil && store.log.components(separatedBy: "broker connection:").count == 1, "the real store lost its connection")
        #expect(try await client.watching(try CustomerID("alice"))?.watching.map(\.sku) == ["ipad"])
        try await store.send(SIGTERM)
    }

    @Test("subscribe, stock, watching, inventory and unsubscribe against a running store")
    func session() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let connection = ["--broker", broker.url]

        let subscribed = try await restock(["subscribe"] + connection + ["--customer", "alice", "--sku", "iphone-15", "--every", "--min-quantity", "2"])
        #expect(subscribed.status == 0, "\(subscribed.standardError)")
        #expect(subscribed.standardOutput.contains("alice is watching iphone-15 (position 1, every, at least 2, until "), "\(subscribed.standardOutput)")

        let watching = try await restock(["watching"] + connection + ["--customer", "alice"])
        #expect(watching.standardOutput.hasPrefix("iphone-15\tposition 1\tevery\tat least 2"))

        let stocked = try await restock(["stock"] + connection + ["--sku", "iphone-15", "--set", "3"])
        #expect(stocked.status == 0 && stocked.standardOutput == "iphone-15: 3 on hand\n")
        let added = try await restock(["stock"] + connection + ["--sku", "iphone-15", "--add", "-5"])
        #expect(added.standardOutput == "iphone-15: 0 on hand\n")

        let inventory = try await restock(["inventory"] + connection)
        #expect(inventory.standardOutput == "iphone-15\t0\n")

        let unsubscribed = try await restock(["unsubscribe"] + connection + ["--customer", "alice", "--all"])
        #expect(unsubscribed.status == 0 && unsubscribed.standardOutput.contains("alice stopped watching everything"))
        let empty = try await restock(["watching"] + connection + ["--customer", "alice"])
        #expect(empty.standardOutput == "alice is not watching anything\n")
        try await store.send(SIGTERM)
    }

    @Test(
        "errors are one plain line on stderr and a non-zero exit",
        arguments: [
            (["subscribe", "--customer", "a/b", "--sku", "x"], "error: --customer: invalid customer id"),
            (["subscribe", "--customer", "alice", "--sku", "x", "--min-quantity", "0"], "error: --min-quantity must be from 1 to 1000000000, not 0"),
            (["subscribe", "--customer", "alice", "--sku", "x", "--min-quantity", "-5"], "error: --min-quantity must be from 1 to 1000000000, not -5"),
            (["subscribe", "--customer", "alice", "--sku", "x", "--min-quantity", "9223372036854775807"], "error: --min-quantity must be from 1 to 1000000000"),
            (["subscribe", "--customer", "alice", "--sku", "x", "--wait", "inf"], "error: --wait must be a number of seconds from 0.1 to 86400"),
            (["subscribe", "--customer", "alice", "--sku", "x", "--wait", "1e300"], "error: --wait must be a number of seconds"),
            (["subscribe", "--customer", "alice", "--sku", "x", "--wait", "-1"], "error: --wait must be a number of seconds"),
            (["unsubscribe", "--customer", "alice", "--all", "--wait", "nan"], "error: --wait must be a number of seconds"),
            (["stock", "--sku", "x", "--set", "1", "--wait", "inf"], "error: --wait must be a number of seconds"),
            (["stock", "--sku", "x", "--add", "-9223372036854775808"], "error: --add must be from -1000000000 to 1000000000"),
            (["stock", "--sku", "x", "--add", "-999999999999999999"], "error: --add must be from -1000000000 to 1000000000"),
            (["stock", "--sku", "x", "--set", "1000000001"], "error: --set must be from 0 to 1000000000"),
            (["listen", "--customer", "alice", "--timeout", "nan"], "error: --timeout must be a number of seconds"),
            (["listen", "--customer", "alice", "--timeout", "inf"], "error: --timeout must be a number of seconds"),
            (["listen", "--customer", "alice", "--timeout", "1e20"], "error: --timeout must be a number of seconds"),
            (["listen", "--customer", "alice", "--count", "-1"], "error: --count must be a whole number, at least 1, not -1"),
            (["inventory", "--broker", "mqtt://user:pw@"], "error: --broker: invalid configuration: broker URL \"mqtt://\" has no usable host"),
            (["stock", "--sku", "x", "--set", "1", "--add", "1"], "error: give exactly one of --set N and --add N"),
            (["unsubscribe", "--customer", "alice"], "error: give --sku SKU or --all"),
            (["inventory", "--broker", "http://nope"], "error: --broker: invalid configuration: broker URL \"http://nope\" must start with mqtt://"),
            (["serve", "--alerts-per-unit", "-1"], "error: --alerts-per-unit must be 0 (off) through 1000000, not -1"),
            // Past Int's range, or not a whole number: the option's own line, not ArgumentParser's "is invalid" (an outside trial).
            (["serve", "--alerts-per-unit", "99999999999999999999"], #"error: --alerts-per-unit must be 0 (off) through 1000000, not "99999999999999999999""#),
            (["serve", "--alerts-per-unit", "1.5"], #"error: --alerts-per-unit must be 0 (off) through 1000000, not "1.5""#),
            (["serve", "--max-watches-per-customer", "99999999999999999999"], #"error: --max-watches-per-customer must be 1 through 1000000, not "99999999999999999999""#),
            (["serve", "--customer-burst", "99999999999999999999"], #"error: --customer-burst must be 1 through 1000000, not "99999999999999999999""#),
            // Seconds in plain decimal only: Double took 0x10 for sixteen (an outside trial: a store started).
            (["serve", "--drain-timeout", "0x10"], #"error: --drain-timeout must be a number of seconds from 0 to 3600, not "0x10""#),
            (["subscribe", "--customer", "alice", "--sku", "x", "--wait", "0x1p-3"], #"error: --wait must be a number of seconds from 0.1 to 86400, not "0x1p-3""#),
            (["subscribe", "--customer", "alice", "--sku", "x", "--wait", "5s"], #"error: --wait must be a number of seconds from 0.1 to 86400, not "5s""#),
            (["listen", "--customer", "alice", "--count", "0"], "error: --count must be a whole number, at least 1, not 0"),
            (["listen", "--customer", "alice", "--count", "99999999999999999999"], #"error: --count must be a whole number, at least 1, not "99999999999999999999""#),
            (["listen", "--customer", "alice", "--timeout", "0x10"], #"error: --timeout must be a number of seconds from 0.1 to 86400, not "0x10""#),
            // The prefix names the sessions' client ids too (P:{store}), whose parts `:` separates.
            (["inventory", "--prefix", "a:b"], "error: --prefix: invalid topic prefix \"a:b\": it contains ':'"),
            // Checked with the rate off too (found by the outside trial).
            (["serve", "--customer-rate", "off", "--customer-burst", "-5"], "error: --customer-burst must be 1 through 1000000, not -5"),
            (["stock", "--sku", "x", "--set", "-2"], "error: --set must be from 0 to 1000000000, not -2"),
            // Past Int's range, or not a number: the same line, not ArgumentParser's "is invalid" (found by the newcomer's path).
            (["stock", "--sku", "x", "--add", "99999999999999999999"], "error: --add must be from -1000000000 to 1000000000, not \"99999999999999999999\""),
            (["stock", "--sku", "x", "--set", "1e3"], "error: --set must be a whole number (in digits) from 0 to 1000000000, not \"1e3\""),
            (["subscribe", "--customer", "alice", "--sku", "x", "--min-quantity", "two"], "error: --min-quantity must be a whole number (in digits) from 1 to 1000000000, not \"two\""),
        ])
    func usageErrors(arguments: [String], message: String) async throws {
        let result = try await restock(arguments)
        #expect(result.status != 0)
        #expect(result.standardError.hasPrefix(message), "\(result.standardError)")
        #expect(result.standardError.split(separator: "\n").count == 1)
        #expect(result.standardOutput.isEmpty)
    }

    @Test("an unreachable broker and an offline store are clear errors")
    func unreachable() async throws {
        let refusing = try RefusingLoopbackPort(), port = refusing.port
        defer { withExtendedLifetime(refusing) {} }  // refusing to the end, not only until its last use
        let noBroker = try await restock(["subscribe", "--broker", "mqtt://127.0.0.1:\(port)", "--customer", "alice", "--sku", "x"])
        #expect(noBroker.status != 0)
        #expect(noBroker.standardError == "error: cannot connect to the broker: mqtt://127.0.0.1:\(port): Connection refused\n")

        let broker = try await MosquittoBroker.start()
        let noStore = try await restock(["stock", "--broker", broker.url, "--store", "nowhere", "--sku", "x", "--set", "1", "--wait", "1"])
        #expect(noStore.status != 0)
        #expect(noStore.standardError == "error: no store nowhere has ever been online on this broker: start it with `restock serve --store nowhere`\n")
        for read in [["inventory"], ["watching", "--customer", "alice"]] {
            let unknown = try await restock(read + ["--broker", broker.url, "--store", "nowhere"])
            #expect(unknown.status != 0, "\(read)")
            #expect(unknown.standardError == "error: no store nowhere has ever been online on this broker: start it with `restock serve --store nowhere`\n")
        }
    }

    @Test("a status left online by a store that is gone (stale heartbeat) counts as offline; a file as data directory, a name longer than a file system takes, a path longer than SQLite opens (a standby waited on it for ever), or a symbolic link that leads nowhere is one line, with nothing made")
    func staleStatusAndBadDataDirectory() async throws {
        let broker = try await MosquittoBroker.start()
        let stale = Timestamp.string(from: Date().addingTimeInterval(-60))
        try await mosquittoPub(
            broker, "restock/apple/status",
            #"{"heartbeatAt":"\#(stale)","instance":"bbbbbbbbbbbb","since":"\#(stale)","state":"online","store":"apple"}"#, retain: true)
        let result = try await restock(["stock", "--broker", broker.url, "--sku", "x", "--set", "1", "--wait", "1"])
        #expect(result.standardError == "error: store apple is offline: start it with `restock serve --store apple`\n", "\(result.standardError)")
        let file = try await restock(["serve", "--broker", broker.url, "--data", "/etc/passwd"])
        #expect(file.status != 0)
        let errors = file.standardError.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(errors.count == 1 && errors[0].hasPrefix("error: cannot open /etc/passwd: "), "\(file.standardError)")
        #expect(errors.first == "error: cannot open /etc/passwd: Not a directory", "\(file.standardError)")
        // A name longer than a file system takes says so (Foundation's own words were "The file name is invalid.").
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("restock-long-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let long = scratch.appendingPathComponent(String(repeating: "a", count: 300)).path
        let tooLong = try await restock(["serve", "--broker", broker.url, "--data", long])
        #expect(tooLong.status != 0)
        let lines = tooLong.standardError.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(lines == ["error: cannot open \(long): File name too long"], "\(tooLong.standardError)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path), "nothing made")
        // A path longer than SQLite opens: refused at once, by a standby too (it waited for ever), with nothing made.
        let deep = scratch.appendingPathComponent(String(repeating: "p", count: 200)).appendingPathComponent(String(repeating: "q", count: 250)).path
        for standby in [[], ["--standby"]] {
            let refused = try await restock(["serve", "--broker", broker.url, "--data", deep] + standby)
            #expect(refused.status == 1, "\(standby)")
            let errors = refused.standardError.split(separator: "\n").filter { $0.hasPrefix("error:") }
            #expect(
                errors == ["error: cannot open \(deep): the path is \(deep.utf8.count) bytes long, and SQLite opens files only in a directory of at most 489 bytes: give a shorter path"],
                "\(standby) \(refused.standardError)")
            #expect(!FileManager.default.fileExists(atPath: scratch.path), "\(standby): nothing made")
        }
        // A loop of symbolic links, and a link to nothing ("A file with the same name already exists", found by the same trial).
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let (one, two, dangling) = (scratch.appendingPathComponent("one").path, scratch.appendingPathComponent("two").path, scratch.appendingPathComponent("dangling").path)
        let nowhere = scratch.appendingPathComponent("nowhere").path
        try FileManager.default.createSymbolicLink(atPath: one, withDestinationPath: two)
        try FileManager.default.createSymbolicLink(atPath: two, withDestinationPath: one)
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: nowhere)
        // A link to a directory whose real path is longer than SQLite opens (it passed the check: a second trial).
        let longReal = scratch.appendingPathComponent(String(repeating: "r", count: 240)).appendingPathComponent(String(repeating: "s", count: 240)).path
        try FileManager.default.createDirectory(atPath: longReal, withIntermediateDirectories: true)
        let short = scratch.appendingPathComponent("short").path
        try FileManager.default.createSymbolicLink(atPath: short, withDestinationPath: longReal)
        let dangles = "is a symbolic link to \(nowhere), which does not exist: make that directory, or give a path without the link"
        for standby in [[], ["--standby"]] {
            for (path, expected) in [
                (one, "error: cannot open \(one): Too many levels of symbolic links"),
                (one + "/data", "error: cannot open \(one)/data: Too many levels of symbolic links"),
                (dangling, "error: cannot open \(dangling): \(dangling) \(dangles)"),
                (dangling + "/data", "error: cannot open \(dangling)/data: \(dangling) \(dangles)"),
                (short, "error: cannot open \(short): its real path (\(longReal)) is \(longReal.utf8.count) bytes long, and SQLite opens files only in a directory of at most 489 bytes: give a shorter path"),
            ] {
                let refused = try await restock(["serve", "--broker", broker.url, "--data", path] + standby)
                #expect(refused.status == 1, "\(standby) \(path)")
                #expect(refused.standardError.split(separator: "\n").filter { $0.hasPrefix("error:") } == [Substring(expected)], "\(refused.standardError)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted() == ["dangling", "one", String(repeating: "r", count: 240), "short", "two"], "nothing made")
        #expect(try FileManager.default.contentsOfDirectory(atPath: longReal).isEmpty, "nothing made through the link")
    }

    @Test("an argument or a RESTOCK_* variable whose bytes are not UTF-8 is refused in one line, with nothing made (Swift's strings replaced the bytes, and a store made another directory than the one given: found by an outside trial)")
    func notUTF8Refused() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("restock-utf8-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        // The shell's printf makes the byte 0xE9 (é in Latin-1) that a Swift string cannot hold.
        let argument = try await ChildProcess.run(
            "/bin/sh", ["-c", #"exec "$0" serve --broker mqtt://127.0.0.1:1 --data "$1/lat$(printf '\351')1""#, restockExecutable, scratch.path], within: 30)
        #expect(argument.status == 64)
        #expect(argument.standardError.hasPrefix("error: argument 5 (") && argument.standardError.hasSuffix(") is not valid UTF-8: give paths and values in UTF-8\n"), "\(argument.standardError)")
        let variable = try await ChildProcess.run(
            "/bin/sh", ["-c", #"RESTOCK_DATA="$1/lat$(printf '\351')1" exec "$0" serve --broker mqtt://127.0.0.1:1"#, restockExecutable, scratch.path], within: 30)
        #expect(variable.status == 64)
        #expect(variable.standardError == "error: RESTOCK_DATA is not valid UTF-8: give paths and values in UTF-8\n", "\(variable.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty, "nothing made")
    }

    @Test("a TLS file that is missing, a directory, empty or given without its pair is refused in one line naming the option and the file, with the usage status, before a store opens its data (libmosquitto said only 'Invalid function arguments provided', after the data directory was made: found by an outside trial)")
    func badTLSFilesRefusedFirst() async throws {
        func quoted(_ path: String) -> String { String(reflecting: String(path.prefix(40))) + (path.count > 40 ? "…" : "") }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("restock-tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let data = scratch.appendingPathComponent("data").path
        let broker = "mqtts://127.0.0.1:1"
        try FileManager.default.createDirectory(at: scratch.appendingPathComponent("tls"), withIntermediateDirectories: true)
        let pem = scratch.appendingPathComponent("tls/client.pem").path, text = scratch.appendingPathComponent("tls/notes.txt").path
        try Data("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: pem))
        try Data("allow_anonymous true\n".utf8).write(to: URL(fileURLWithPath: text))
        let cases: [([String], String)] = [
            (["--cafile", "/nonexistent.pem"], #"error: --cafile "/nonexistent.pem": No such file or directory"#),
            (["--cafile", "/etc"], #"error: --cafile "/etc" is a directory: give a PEM file"#),
            (["--key", ""], "error: --key is empty: give a PEM file, or leave it out"),
            (["--cert", pem], "error: --cert and --key go together: give both, or neither"),
            // Not PEM at all: a store retried the handshake for ever, a standby failed only at its takeover (a second trial).
            (["--cafile", text], "error: --cafile \(quoted(text)) holds no PEM block (-----BEGIN …): give a PEM file"),
        ]
        for (options, expected) in cases {
            for command in [["inventory"], ["serve", "--data", data], ["serve", "--standby", "--data", data]] {
                let result = try await restock(command + ["--broker", broker] + options)
                #expect(result.status == 64, "\(command) \(options): \(result.standardError)")
                let lines = result.standardError.split(separator: "\n").map(String.init)
                #expect(lines == [expected], "\(command) \(options)")
                #expect(!FileManager.default.fileExists(atPath: data), "\(command) \(options): nothing made")
            }
        }
    }

    @Test("--wait waits for an offline store to come back online; without --wait, a store the broker has never seen is refused at once")
    func waitForTheStore() async throws {
        let broker = try await MosquittoBroker.start()
        let clock = ContinuousClock()
        let unknown = try await clock.measure {
            let result = try await restock(["stock", "--broker", broker.url, "--store", "nowhere", "--sku", "x", "--set", "1"])
            #expect(result.standardError == "error: no store nowhere has ever been online on this broker: start it with `restock serve --store nowhere`\n")
        }
        // Refused at once: the message is the never-seen path's, not the one a wait that ran out prints (a bound of 9 s
        // against the default 10 s wait failed at 9.2 s beside the whole of make test).
        print("a store the broker never saw was refused after \(unknown)")
        let store = try StoreProcess(broker: broker)
        try await store.start()
        try await store.send(SIGTERM)
        let command = Task { try await restock(["stock", "--broker", broker.url, "--sku", "pencil", "--set", "2", "--wait", "30"]) }
        try await store.start()
        let result = try await command.value
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "pencil: 2 on hand\n")
        try await store.send(SIGTERM)
    }

    @Test("SIGTERM ends serve promptly while it is still trying to reach the broker")
    func stopWhileConnecting() async throws {
        let refusing = try RefusingLoopbackPort(), port = refusing.port
        defer { withExtendedLifetime(refusing) {} }  // refusing to the end, not only until its last use
        let data = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let log = data.appendingPathExtension("log")
        defer { try? FileManager.default.removeItem(at: log) }
        let serve = try ChildProcess(restockExecutable, ["serve", "--broker", "mqtt://127.0.0.1:\(port)", "--data", data.path], outputFile: log)
        try await waitUntil("serve to retry", within: 20) { serve.output.contains("retrying") }
        serve.send(SIGTERM)
        try await serve.waitForExit(within: 3)
        #expect(serve.exitStatus == 0, "\(serve.output)")
    }

    @Test("a second store process on the same data directory is refused and changes nothing")
    func secondStore() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let data = store.dataDirectory
        let second = try await restock(["serve", "--broker", broker.url, "--data", data.path])
        #expect(second.status != 0)
        #expect(second.standardError.contains("another store process is using \(data.path)"))
        // It says what to run instead (an outside trial: the refusal named no way on).
        #expect(second.standardError.contains("run `restock serve --standby` on it"), "\(second.standardError)")
        try await store.send(SIGTERM)
    }

    @Test("credentials in the broker URL are used: mqtt://user:password@host:port")
    func credentialsInURL() async throws {
        let broker = try await MosquittoBroker.start(.init(users: ["someone": "secret"]))
        let url = "mqtt://someone:secret@127.0.0.1:\(broker.port)"
        let store = try StoreProcess(broker: broker, brokerURL: url)
        try await store.start(username: "someone", password: "secret")
        let refused = try await restock(["inventory", "--broker", broker.url])
        #expect(refused.status != 0, "without the URL's credentials the broker refuses")
        let result = try await restock(["inventory", "--broker", url])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "no stock recorded\n")
        let connection = try BrokerSettings(url: "mqtt://ann%40shop:p%3Aw@127.0.0.1:\(broker.port)")
        #expect(connection.username == "ann@shop" && connection.password == "p:w")
        #expect(connection.broker == .hostname("127.0.0.1", port: broker.port))
        try await store.send(SIGTERM)
    }

    @Test("a data directory belongs to one store: another store id is refused with one line")
    func dataDirectoryOfAnotherStore() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        try await store.send(SIGTERM)
        let data = store.dataDirectory
        let pear = try await restock(["serve", "--store", "pear", "--broker", broker.url, "--data", data.path])
        #expect(pear.status != 0)
        #expect(pear.standardError.contains("holds the state of store apple"), "\(pear.standardError)")
        #expect(pear.standardError.split(separator: "\n").filter { $0.hasPrefix("error:") }.count == 1)
    }

    @Test("listen prints each alert once, by id, and ignores fields it does not know")
    func listenDeduplicates() async throws {
        let broker = try await MosquittoBroker.start()
        // A first listen creates the persistent session that queues what follows.
        let hello = try await restock(["listen", "--broker", broker.url, "--customer", "alice", "--timeout", "1"])
        #expect(hello.status == 0, "\(hello.standardError)")
        func alert(_ id: String) -> String {
            #"{"version":1,"id":"\#(id)","store":"apple","customer":"alice","sku":"ipad","quantity":1,"position":1,"message":"m","at":"2026-11-21T10:00:00Z","channel":"sms"}"#
        }
        for id in ["apple-1", "apple-1", "apple-2"] {
            try await mosquittoPub(broker, "restock/apple/customers/alice/alerts", alert(id))
        }
        let result = try await restock(["listen", "--broker", broker.url, "--customer", "alice", "--count", "2", "--timeout", "10", "--json"])
        #expect(result.status == 0, "\(result.standardError)")
        let ids = result.standardOutput.split(separator: "\n").compactMap { try? RestockAlert(jsonData: Data($0.utf8)).id }
        #expect(ids == ["apple-1", "apple-2"])
    }

    func alertIDs(_ output: String) -> [String] {
        output.split(separator: "\n").compactMap { try? RestockAlert(jsonData: Data($0.utf8)).id }
    }

    @Test("listen --count never drops an alert it has taken: what arrived with the last one is printed too")
    func listenCountKeepsWhatItTook() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let connection = ["--broker", broker.url]
        for item in ["lc1", "lc2", "lc3"] {
            #expect(try await restock(["subscribe"] + connection + ["--customer", "lc", "--sku", item]).status == 0)
        }
        for item in ["lc1", "lc2", "lc3"] {
            #expect(try await restock(["stock"] + connection + ["--sku", item, "--set", "1"]).status == 0)
        }
        let first = try await restock(["listen"] + connection + ["--customer", "lc", "--count", "1", "--timeout", "20", "--json"])
        #expect(first.status == 0, "\(first.standardError)")
        let taken = alertIDs(first.standardOutput)
        #expect(taken.count >= 1)
        if taken.count < 3 {
            let rest = try await restock(["listen"] + connection + ["--customer", "lc", "--count", "\(3 - taken.count)", "--timeout", "20", "--json"])
            #expect(rest.status == 0, "\(rest.standardError)")
            #expect(Set(taken + alertIDs(rest.standardOutput)).count == 3, "an alert was taken and dropped")
        }
        // Fewer alerts than asked for is not a usage error.
        let none = try await restock(["listen"] + connection + ["--customer", "lc", "--count", "1", "--timeout", "1"])
        #expect(none.status == 1 && none.standardError == "error: 0 of 1 alerts arrived within 1 s\n", "\(none.standardError)")
        try await store.send(SIGTERM)
    }

    @Test("an alert raised before the customer's first listen waits for it: subscribe makes the listening session")
    func firstAlertBeforeFirstListen() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let connection = ["--broker", broker.url]
        #expect(try await restock(["stock"] + connection + ["--sku", "q2", "--set", "4"]).status == 0)
        let subscribed = try await restock(["subscribe"] + connection + ["--customer", "newbie", "--sku", "q2"])
        #expect(subscribed.standardOutput.contains("the alert has been sent"), "\(subscribed.standardOutput)")
        // And a restock later, still before any listen.
        #expect(try await restock(["subscribe"] + connection + ["--customer", "newbie", "--sku", "q3"]).status == 0)
        #expect(try await restock(["stock"] + connection + ["--sku", "q3", "--set", "1"]).status == 0)
        let listened = try await restock(["listen"] + connection + ["--customer", "newbie", "--count", "2", "--timeout", "20", "--json"])
        #expect(listened.status == 0, "\(listened.standardError)")
        #expect(Set(alertIDs(listened.standardOutput)).count == 2)

        // With alerts queued in an existing session, making sure of the session again takes none of them.
        #expect(try await restock(["subscribe"] + connection + ["--customer", "newbie", "--sku", "q4"]).status == 0)
        #expect(try await restock(["stock"] + connection + ["--sku", "q4", "--set", "1"]).status == 0)
        #expect(try await restock(["subscribe"] + connection + ["--customer", "newbie", "--sku", "q5"]).status == 0)
        let queued = try await restock(["listen"] + connection + ["--customer", "newbie", "--count", "1", "--timeout", "20", "--json"])
        #expect(queued.status == 0, "\(queued.standardError)")
        #expect(alertIDs(queued.standardOutput).count == 1)
        try await store.send(SIGTERM)
    }

    @Test("every command has --help")
    func help() async throws {
        for command in ["serve", "subscribe", "unsubscribe", "listen", "stock", "inventory", "watching", "demo"] {
            let result = try await restock([command, "--help"])
            #expect(result.status == 0 && result.standardOutput.contains("USAGE: restock \(command)"), "\(command)")
            #expect(result.standardOutput.contains("--broker"), "\(command)")
        }
    }
}
