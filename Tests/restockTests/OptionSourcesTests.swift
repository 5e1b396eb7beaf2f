import ArgumentParser
import Foundation
import Testing

@testable import restock

/// Every option from the command line, a `RESTOCK_*` variable or the config file (docs/operations.md, "Configuration").
@Suite("Where options come from")
struct OptionSourcesTests {
    /// The options each command needs to validate, and a value for every option that differs from its default. A new
    /// option without a value here fails ``everyVariableReachesItsOption()``.
    static let required: [String: [String]] = [
        "subscribe": ["--customer", "c0", "--sku", "s0"], "unsubscribe": ["--customer", "c0", "--sku", "s0"],
        "listen": ["--customer", "c0"], "stock": ["--sku", "s0", "--set", "1"], "watching": ["--customer", "c0"],
        "backup": ["--data", "/tmp/d0", "--to", "/tmp/t0"], "forget": ["--customer", "c0"], "export": ["--data", "/tmp/d0"],
    ]
    static let samples: [String: String] = [
        "broker": "mqtt://127.0.0.2:1884", "username": "u1", "password": "p1", "cafile": pemFile, "cert": pemFile,
        "key": pemFile, "mqtt-version": "3.1.1", "prefix": "shop", "store": "pear", "data": "/tmp/d1", "database": "postgres://u@127.0.0.1:5433/d1",
        "alerts-per-unit": "3", "drain-timeout": "7", "max-watches-per-customer": "9", "max-watches": "500", "customer-rate": "off",
        "customer-burst": "4", "log-level": "debug", "log-format": "json", "standby": "true", "customer": "c9", "sku": "s9",
        "every": "true", "min-quantity": "5", "wait": "3", "all": "true", "count": "2", "timeout": "4", "json": "true",
        "set": "8", "add": "-2", "to": "/tmp/t9", "http": "127.0.0.1:9091", "watch-lifetime": "30d", "alert-expiry": "60",
        "expires-at": "2999-01-01T00:00:00Z", "expires-in": "2h", "replay": "3", "drop": "4",
    ]
    /// Options that cannot go with another the command needs otherwise: that one is left out.
    static let excludes = ["all": "sku", "add": "set", "database": "data"]
    /// A file that passes for PEM, for the TLS options' values: they are checked when read.
    static let pemFile: String = {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-option-sources-test.pem")
        try? Data("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".utf8).write(to: file)
        return file.path
    }()
    /// Options that need another: the TLS files an mqtts:// broker (files that exist: they are checked when read), and a
    /// client certificate its key, and the reverse.
    static let needs = [
        "cafile": ["--broker", "mqtts://127.0.0.1:8883"], "cert": ["--broker", "mqtts://127.0.0.1:8883", "--key", pemFile],
        "key": ["--broker", "mqtts://127.0.0.1:8883", "--cert", pemFile], "password": ["--username", "u0"],
    ]

    static let commands = Restock.configuration.subcommands

    func parsed(_ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let sources = try OptionSources(arguments, environment: environment, commands: Self.commands)
        return String(describing: try Restock.parseAsRoot(sources.arguments))
    }

    @Test("each option of each command is reached by its RESTOCK_* variable, as by the option itself")
    func everyVariableReachesItsOption() throws {
        var seen = 0
        for command in Self.commands {
            let name = command._commandName
            for option in OptionNames.of(command) where option.name != "config" {
                let sample = try #require(Self.samples[option.name], "no sample value for --\(option.name) of \(name): add one")
                var base = [name] + (Self.required[name] ?? [])
                if let excluded = Self.excludes[option.name], let index = base.firstIndex(of: "--\(excluded)") {
                    base.removeSubrange(index...index + 1)
                }
                if let index = base.firstIndex(of: "--\(option.name)") { base.removeSubrange(index...index + 1) }
                base += Self.needs[option.name] ?? []
                let typed = try parsed(base + (option.isFlag ? ["--\(option.name)"] : ["--\(option.name)", sample]))
                let fromEnvironment = try parsed(base, environment: [OptionSources.variable(option.name): sample])
                #expect(fromEnvironment == typed, "\(name) \(OptionSources.variable(option.name))")
                #expect(fromEnvironment != (try? parsed(base)), "\(name) \(OptionSources.variable(option.name)) changed nothing")
                seen += 1
            }
        }
        #expect(seen > 40)
    }

    @Test("each command's help names the variable beside each option")
    func helpNamesTheVariables() {
        for command in Self.commands {
            let lines = Restock.helpMessage(for: command, columns: 200).split(separator: "\n")
            for option in OptionNames.of(command) {
                // The option's entry: its line, and those after it up to the next option.
                let start = lines.firstIndex { $0.hasPrefix("  --\(option.name) ") || $0 == "  --\(option.name)" } ?? lines.endIndex
                let end = lines[min(start + 1, lines.endIndex)...].firstIndex { $0.hasPrefix("  -") } ?? lines.endIndex
                let entry = lines[start..<max(start, end)].joined(separator: " ")
                #expect(entry.contains("(env \(OptionSources.variable(option.name)))"), "\(command._commandName) --\(option.name): \(entry)")
            }
        }
    }

    @Test("the command line wins over the environment, which wins over the file, which wins over the default")
    func precedence() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).json")
        try Data(#"{"drain-timeout": 30, "customer-burst": 7, "standby": true}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        func serve(_ arguments: [String], _ environment: [String: String]) throws -> Restock.Serve {
            let sources = try OptionSources(["serve"] + arguments, environment: environment, commands: Self.commands)
            return try #require(try Restock.parseAsRoot(sources.arguments) as? Restock.Serve)
        }
        let all = try serve(["--config", file.path, "--drain-timeout", "1"], ["RESTOCK_DRAIN_TIMEOUT": "2"])
        #expect(all.drainTimeout.text == "1" && all.customerBurst.text == "7" && all.standby && all.maxWatchesPerCustomer.text == "100")
        let noCommandLine = try serve([], ["RESTOCK_CONFIG": file.path, "RESTOCK_DRAIN_TIMEOUT": "2", "RESTOCK_STANDBY": "false"])
        #expect(noCommandLine.drainTimeout.text == "2" && noCommandLine.customerBurst.text == "7" && !noCommandLine.standby)
        let fileOnly = try serve(["--config=\(file.path)"], [:])
        #expect(fileOnly.drainTimeout.text == "30")
        #expect(try serve([], [:]).drainTimeout.text == "5")
    }

    @Test("a value the environment or the config file gives that the command line or the environment sets aside is said, with what gives it")
    func setAsideSaid() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).json")
        try Data(#"{"drain-timeout": 30, "customer-burst": 7, "set": 4}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        func setAside(_ arguments: [String], _ environment: [String: String]) throws -> [String] {
            try OptionSources(arguments, environment: environment, commands: Self.commands).setAside
        }
        #expect(
            try setAside(["serve", "--config", file.path, "--drain-timeout", "1"], ["RESTOCK_DRAIN_TIMEOUT": "2", "RESTOCK_CUSTOMER_BURST": "9"]) == [
                "RESTOCK_DRAIN_TIMEOUT is set aside: --drain-timeout on the command line gives it",
                "drain-timeout in \(file.path) is set aside: --drain-timeout on the command line gives it",
                "customer-burst in \(file.path) is set aside: RESTOCK_CUSTOMER_BURST gives it",
            ])
        #expect(try setAside(["stock", "--sku", "x", "--config", file.path, "--add", "1"], [:]) == ["set in \(file.path) is set aside: --add on the command line gives it"])
        #expect(try setAside(["stock", "--sku", "x", "--config", file.path], ["RESTOCK_ADD": "1"]) == ["set in \(file.path) is set aside: RESTOCK_ADD gives it"])
        #expect(try setAside(["serve", "--config", file.path], [:]).isEmpty)
        #expect(try setAside(["serve", "--config", file.path], ["RESTOCK_CONFIG": "/etc/other.json"]) == ["RESTOCK_CONFIG is set aside: --config on the command line gives it"])
        #expect(try setAside(["serve", "--drain-timeout", "1"], [:]).isEmpty)
    }

    @Test("an option on the command line also wins over the environment's value for its alternative (--expires-at over RESTOCK_EXPIRES_IN; found by the issue 24 trial)")
    func alternativeOnTheCommandLine() throws {
        let arguments = ["subscribe", "--customer", "c0", "--sku", "s0", "--expires-at", "2999-01-01T00:00:00Z"]
        let sources = try OptionSources(arguments, environment: ["RESTOCK_EXPIRES_IN": "2h"], commands: Self.commands)
        let subscribe = try #require(try Restock.parseAsRoot(sources.arguments) as? Restock.Subscribe)
        #expect(subscribe.expiresAt == "2999-01-01T00:00:00Z" && subscribe.expiresIn == nil)
        try subscribe.validate()
        // Both from the environment is still the user's mistake, refused in one line.
        let both = errorLine(["subscribe", "--customer", "c0", "--sku", "s0"], ["RESTOCK_EXPIRES_IN": "2h", "RESTOCK_EXPIRES_AT": "2999-01-01T00:00:00Z"])
        #expect(both?.contains("not both") == true, "\(both ?? "accepted")")
    }

    /// The one line `restock` prints for `arguments` with `environment`.
    func errorLine(_ arguments: [String], _ environment: [String: String]) -> String? {
        do {
            let sources = try OptionSources(arguments, environment: environment, commands: Self.commands)
            do { _ = try Restock.parseAsRoot(sources.arguments) } catch { return sources.describe(Restock.emptyNamed(Restock.message(for: error), given: sources.arguments)) }
            return nil
        } catch {
            return Restock.message(for: error)
        }
    }

    @Test("a bad value from the environment or the file gets the option's own error, naming where it came from")
    func badValues() throws {
        #expect(
            errorLine(["serve"], ["RESTOCK_DRAIN_TIMEOUT": "9999"]) == "RESTOCK_DRAIN_TIMEOUT must be a number of seconds from 0 to 3600, not 9999")
        #expect(errorLine(["serve"], ["RESTOCK_DRAIN_TIMEOUT": "soon"]) == #"RESTOCK_DRAIN_TIMEOUT must be a number of seconds from 0 to 3600, not "soon""#)
        #expect(errorLine(["serve"], ["RESTOCK_STANDBY": "maybe"]) == #"RESTOCK_STANDBY must be true or false (or 1 or 0, yes or no), not "maybe""#)
        #expect(errorLine(["inventory"], ["RESTOCK_STORE": "no way"])?.hasPrefix("RESTOCK_STORE: ") == true)
        #expect(errorLine(["inventory"], ["RESTOCK_BROKER": "http://nope"])?.hasPrefix("RESTOCK_BROKER: ") == true)
        // A list's errors name the variable too, whether they quote one URL of it or none (named none before).
        for list in ["mqtt://a:1,http://b", "mqtt://a:1,mqtt://a:1", "mqtt://a:1,mqtt://b:99999", "mqtt://a:1, ,mqtt://b:2", "mqtt://u:p@a:1,mqtt://v@b:2"] {
            #expect(errorLine(["inventory"], ["RESTOCK_BROKER": list])?.hasPrefix("RESTOCK_BROKER: ") == true, "\(list)")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"customer-rate": "fast"}"#.utf8).write(to: file)
        #expect(errorLine(["serve", "--config", file.path], [:])?.hasPrefix("customer-rate in \(file.path) must be a number") == true)
        try Data(#"{"broker": "mqtt://a:1,mqtt://a:1"}"#.utf8).write(to: file)
        #expect(errorLine(["inventory", "--config", file.path], [:])?.hasPrefix("broker in \(file.path): ") == true)
        try Data(#"{"drain-timout": 1}"#.utf8).write(to: file)
        #expect(errorLine(["serve", "--config", file.path], [:]) == "the config file \(file.path) names no option drain-timout")
        try Data("drain-timeout: 1".utf8).write(to: file)
        #expect(errorLine(["serve"], ["RESTOCK_CONFIG": file.path]) == "the config file \(file.path) is not valid JSON: a value belongs here (a string, number, object, array, true, false or null)")
        #expect(errorLine(["serve", "--config", "/nonexistent/restock.json"], [:]) == "cannot read the config file /nonexistent/restock.json: No such file or directory")
        // The system's reason, and an end to a file that never ends (found by an outside trial: Foundation said "You
        // don't have permission" for /dev/null as root, "error 256" for a directory).
        #expect(errorLine(["serve", "--config", "/tmp"], [:]) == "cannot read the config file /tmp: Is a directory")
        #expect(errorLine(["serve", "--config", "/dev/null"], [:]) == "the config file /dev/null is not valid JSON: the file ends where a value belongs")
        #expect(errorLine(["serve", "--config", "/dev/zero"], [:]) == "the config file /dev/zero is larger than 1 MiB: it holds options only")
        // A FIFO no one writes kept the command waiting for ever, /proc/self/mem said "error 256", and an empty --config
        // was taken as none (found by an outside trial).
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).fifo")
        defer { try? FileManager.default.removeItem(at: fifo) }
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(errorLine(["serve", "--config", fifo.path], [:]) == "cannot read the config file \(fifo.path): it is not a file (a FIFO or a socket)")
        #expect(errorLine(["serve", "--config", "/proc/self/mem"], [:]) == "cannot read the config file /proc/self/mem: Input/output error")
        #expect(errorLine(["serve", "--config", ""], [:]) == "--config is empty: give a JSON file of options, or leave it out")
        #expect(errorLine(["serve"], ["RESTOCK_CONFIG": ""]) == "RESTOCK_CONFIG is empty: give a JSON file of options, or leave it out")
    }

    @Test("an empty value from the environment or the file gets the option's own refusal of an empty value, naming where it came from (it read 'Missing value for RESTOCK_DATA': found by an outside trial)")
    func emptyValues() throws {
        #expect(errorLine(["export"], ["RESTOCK_DATA": ""]) == "RESTOCK_DATA is empty: give the store's data directory")
        #expect(errorLine(["backup", "--data", "/x"], ["RESTOCK_TO": ""]) == "RESTOCK_TO is empty: give a new or empty directory for the copy")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"to": ""}"#.utf8).write(to: file)
        #expect(errorLine(["export", "--data", "/x", "--config", file.path], [:]) == "to in \(file.path) is empty: give the file to write")
        // A value that starts with "-" is still a value, not an option.
        #expect(errorLine(["stock", "--sku", "x"], ["RESTOCK_ADD": "-5"]) == nil)
        // An empty flag was taken for false, an empty user name or password went to the broker, a password without a user
        // name failed at the connection with status 1, and an empty version read "not " (found by an outside trial).
        #expect(errorLine(["serve"], ["RESTOCK_STANDBY": ""]) == "RESTOCK_STANDBY is empty: give true or false, or leave it out")
        #expect(errorLine(["report"], ["RESTOCK_JSON": ""]) == "RESTOCK_JSON is empty: give true or false, or leave it out")
        try Data(#"{"every": ""}"#.utf8).write(to: file)
        #expect(
            errorLine(["subscribe", "--customer", "c", "--sku", "s", "--config", file.path], [:])
                == "every in \(file.path) is empty: give true or false, or leave it out")
        #expect(errorLine(["inventory"], ["RESTOCK_USERNAME": ""]) == "RESTOCK_USERNAME is empty: give the broker's user name, or leave it out")
        #expect(errorLine(["inventory", "--password", ""], [:]) == "--password is empty: give the broker's password, or leave it out")
        #expect(
            errorLine(["inventory"], ["RESTOCK_PASSWORD": "p"]) == "RESTOCK_PASSWORD needs a user name: give --username too, or a user in the broker URL")
        #expect(errorLine(["inventory", "--broker", "mqtt://u@127.0.0.1:1"], ["RESTOCK_PASSWORD": "p"]) == nil)
        #expect(errorLine(["inventory"], ["RESTOCK_MQTT_VERSION": ""]) == #"RESTOCK_MQTT_VERSION must be 5 or 3.1.1, not """#)
    }

    @Test("a config file is read as strictly as a request: a name twice, a trailing comma or a null is refused in one line, naming why (Foundation took the first of two values without a word: found by an outside trial)")
    func strictConfigFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let cases = [
            #"{"drain-timeout": 1, "drain-timeout": 2}"#: #"is not valid JSON: the name "drain-timeout" appears twice in one object"#,
            #"{"drain-timeout": 1,}"#: "is not valid JSON: a trailing comma",
            #"{"drain-timeout": 1"#: "is not valid JSON: the file ends inside an object or array",
            #"[{"drain-timeout": 1}]"#: "is not a JSON object of options",
        ]
        for (text, refusal) in cases {
            try Data(text.utf8).write(to: file)
            let line = errorLine(["serve", "--config", file.path], [:])
            #expect(line?.hasPrefix("the config file \(file.path) \(refusal)") == true, "\(text): \(line ?? "accepted")")
        }
        // Numbers as the command line would give them: a whole one in digits (1e1 is 10), any other as written.
        try Data(#" {"drain-timeout": 1e1, "alerts-per-unit": 2, "standby": true, "log-level": "debug"} "#.utf8).write(to: file)
        let sources = try OptionSources(["serve", "--config", file.path], environment: [:], commands: Self.commands)
        let serve = try #require(try Restock.parseAsRoot(sources.arguments) as? Restock.Serve)
        #expect(try serve.limits().drainTimeout == 10 && serve.limits().alertsPerUnit == 2 && serve.standby && serve.logLevel == "debug")
        try Data(#"{"drain-timeout": 2.5}"#.utf8).write(to: file)
        let fraction = try OptionSources(["serve", "--config", file.path], environment: [:], commands: Self.commands)
        #expect(try (try Restock.parseAsRoot(fraction.arguments) as? Restock.Serve)?.limits().drainTimeout == 2.5)
    }

    @Test("a command an error line quotes in backquotes keeps its options as written, while the line's own are named by their origin ('`restock serve RESTOCK_STORE t53`': found by an outside trial)")
    func quotedCommandsKeepTheirOptions() throws {
        let sources = try OptionSources(["stock", "--sku", "x", "--set", "1"], environment: ["RESTOCK_STORE": "t53"], commands: Self.commands)
        #expect(
            sources.describe("store t53 is offline: start it with `restock serve --store t53`; --store names it")
                == "store t53 is offline: start it with `restock serve --store t53`; RESTOCK_STORE names it")
    }

    @Test("the third outside trial of the options: an option's name is replaced by its origin only where it ends (RESTOCK_DATA made 'RESTOCK_DATAbase' of --database), and empty, conflicting or too long values are refused naming the option")
    func thirdTrial() throws {
        #expect(errorLine(["serve", "--database", "bogus"], ["RESTOCK_DATA": "d1"]) == "RESTOCK_DATA and --database both say where the store keeps its state: give one (on PostgreSQL nothing is kept on local disk)")
        #expect(errorLine(["serve", "--max-watches-per-customer", "0"], ["RESTOCK_MAX_WATCHES": "5"]) == "--max-watches-per-customer must be 1 through 1000000, not 0")
        #expect(OptionSources.replacingOption("data", with: "X", in: "--data, --database, --data-dir, --data: --data") == "X, --database, --data-dir, X: X")
        // Empty values say so, named by their origin.
        let emptyDatabase = "is empty: give a PostgreSQL URL such as postgres://user@host:5432/database, or leave it out"
        #expect(errorLine(["serve", "--data", "d1"], ["RESTOCK_DATABASE": ""]) == "RESTOCK_DATABASE \(emptyDatabase)")
        #expect(errorLine(["export", "--database", ""], ["RESTOCK_DATA": "d1"]) == "--database \(emptyDatabase)")
        #expect(errorLine(["backup", "--to", "t", "--database", ""], [:]) == "--database \(emptyDatabase)")
        #expect(errorLine(["inventory", "--broker", ""], [:]) == "--broker is empty: give the broker's URL, such as mqtt://127.0.0.1:1883, or leave it out")
        #expect(errorLine(["inventory"], ["RESTOCK_BROKER": ""]) == "RESTOCK_BROKER is empty: give the broker's URL, such as mqtt://127.0.0.1:1883, or leave it out")
        #expect(errorLine(["inventory", "--cafile", ""], [:]) == "--cafile is empty: give a PEM file, or leave it out")
        #expect(errorLine(["serve", "--drain-timeout", ""], [:]) == "--drain-timeout is empty: give a value, or leave it out")
        #expect(errorLine(["listen", "--customer", "c"], ["RESTOCK_COUNT": ""]) == "RESTOCK_COUNT is empty: give a value, or leave it out")
        // Every number is read one way: digits, a `-` only where negatives are taken, an empty value said so (an outside trial:
        // `+5` taken by the whole-number options and refused by the others, `-0` taken for 0, three wordings of empty).
        #expect(errorLine(["serve", "--max-watches-per-customer", "+5"], [:]) == #"--max-watches-per-customer must be 1 through 1000000, not "+5""#)
        #expect(errorLine(["serve", "--alerts-per-unit", "-0"], [:]) == "--alerts-per-unit must be 0 (off) through 1000000, not -0")
        #expect(errorLine(["stock", "--sku", "x", "--set", "+3"], [:]) == #"--set must be a whole number (in digits) from 0 to 1000000000, not "+3""#)
        #expect(errorLine(["stock", "--sku", "x", "--set", "-0"], [:]) == "--set must be from 0 to 1000000000, not -0")
        #expect(errorLine(["stock", "--sku", "x", "--add", "-0"], [:]) == nil)
        #expect(errorLine(["stock", "--sku", "x", "--add", "-2"], [:]) == nil)
        #expect(errorLine(["listen", "--customer", "c", "--count", "+1"], [:]) == #"--count must be a whole number, at least 1, not "+1""#)
        #expect(errorLine(["serve", "--max-watches", ""], [:]) == "--max-watches is empty: give a value, or leave it out")
        #expect(errorLine(["serve"], ["RESTOCK_ALERT_EXPIRY": ""]) == "RESTOCK_ALERT_EXPIRY is empty: give a value, or leave it out")
        #expect(errorLine(["serve", "--customer-rate", ""], [:]) == "--customer-rate is empty: give a value, or leave it out")
        #expect(errorLine(["serve"], ["RESTOCK_WATCH_LIFETIME": ""]) == "RESTOCK_WATCH_LIFETIME is empty: give a value, or leave it out")
        #expect(errorLine(["subscribe", "--customer", "c", "--sku", "x", "--expires-in", ""], [:]) == "--expires-in is empty: give a value, or leave it out")
        // The fourth trial's: `--option=` with nothing after it, a dead letter's id and a broker's port written with a `+`.
        #expect(errorLine(["serve", "--customer-rate="], [:]) == "--customer-rate is empty: give a value, or leave it out")
        #expect(errorLine(["stock", "--sku", "x", "--set="], [:]) == "--set is empty: give a value, or leave it out")
        #expect(errorLine(["serve", "--customer-rate"], [:])?.hasPrefix("Missing value for") == true)
        #expect(errorLine(["dead-letters", "--replay", "+5"], [:]) == #"--replay must be a dead letter's id, a whole number from 1, not "+5""#)
        #expect(errorLine(["dead-letters", "--drop", "0x10"], [:]) == #"--drop must be a dead letter's id, a whole number from 1, not "0x10""#)
        #expect(errorLine(["dead-letters", "--drop", "-0"], [:]) == "--drop must be a dead letter's id, a whole number from 1, not -0")
        #expect(errorLine(["dead-letters", "--replay", "7"], [:]) == nil)
        #expect(errorLine(["inventory", "--broker", "mqtt://127.0.0.1:+1883"], [:]) == #"--broker: invalid configuration: broker URL "mqtt://127.0.0.1:+1883" has a bad port"#)
        // The fifth trial's: a leading zero, and an IPv6 host's port written with a `+` or a leading zero, as --http's are refused.
        for url in ["mqtt://127.0.0.1:01883", "mqtt://[::1]:+1883", "mqtt://[::1]:01883", "mqtt://[::1]:"] {
            #expect(errorLine(["inventory", "--broker", url], [:]) == #"--broker: invalid configuration: broker URL "\#(url)" has a bad port"#)
        }
        #expect(errorLine(["inventory", "--broker", "mqtt://127.0.0.1:0"], [:]) == "--broker: invalid configuration: broker port 0 is outside 1-65535")
        #expect(errorLine(["inventory", "--broker", "mqtt://[::1]:1883"], [:]) == nil)
        let long = "mqtt://" + String(repeating: "a", count: 254) + ":1883"
        #expect(errorLine(["inventory", "--broker", long], [:])?.hasSuffix("has a bad host: longer than 253 characters, the longest a host name can be") == true)
        #expect(errorLine(["inventory", "--broker", "mqtt://" + String(repeating: "a", count: 253) + ":1883"], [:]) == nil)
        // A value that starts with a dash is the option's value, as for every other option with one (it read "Missing value").
        #expect(errorLine(["serve", "--watch-lifetime", "-1s"], [:])?.hasPrefix("--watch-lifetime must be") == true)
        // A colon in a host out of brackets, and brackets around no IPv6 address.
        for url in ["mqtt://127.0.0.1:52601:52601", "mqtt://::1", "mqtt://::1:1883", "mqtt://fe80::1", "mqtt://1:2:3", "mqtt://[127.0.0.1]:1883"] {
            #expect(
                errorLine(["inventory", "--broker", url], [:])
                    == #"--broker: invalid configuration: broker URL "\#(url)" has a bad host: use a name, an IPv4 address, or an IPv6 address in []"#)
        }
        #expect(errorLine(["serve", "--max-watches", "+5"], [:]) == #"--max-watches must be a whole number from 1 to 1000000000, or off, not "+5""#)
        #expect(errorLine(["serve", "--log-level", ""], [:]) == #"--log-level must be one of trace, debug, info, notice, warning, error, critical, not """#)
        #expect(errorLine(["serve", "--log-level", "INFO"], [:]) == nil)
        #expect(errorLine(["serve", "--http", ""], [:])?.hasSuffix(#"not """#) == true)
        // Credentials: an empty password in the URL, two users, and what MQTT cannot carry.
        #expect(errorLine(["inventory", "--broker", "mqtt://u:@127.0.0.1:1"], [:]) == "--broker: invalid configuration: the broker URL has an empty password after ':': leave out the ':' for a user with no password")
        #expect(errorLine(["inventory", "--broker", "mqtt://u:p@127.0.0.1:1", "--username", "other"], [:]) == #"--username "other" and the broker URL's user "u" differ: give the user once"#)
        #expect(errorLine(["inventory", "--broker", "mqtt://u:p@127.0.0.1:1", "--username", "u"], [:]) == nil)
        #expect(errorLine(["inventory", "--username", String(repeating: "u", count: 65_536)], [:]) == "--username is longer than 65,535 bytes, MQTT's limit")
        #expect(errorLine(["inventory", "--username", "u", "--password", String(repeating: "p", count: 65_536)], [:]) == "--password is longer than 65,535 bytes, MQTT's limit")
        #expect(errorLine(["inventory", "--username", "u\n"], [:]) == "--username holds a control character (a newline, a tab), which MQTT does not take")
        // A value on the command line sets aside its alternative's variable, for --set and --add as for the expiries.
        #expect(errorLine(["stock", "--sku", "x", "--add", "1"], ["RESTOCK_SET": "5"]) == nil)
        #expect(errorLine(["stock", "--sku", "x"], ["RESTOCK_SET": "5", "RESTOCK_ADD": "1"])?.hasPrefix("give exactly one of") == true)
        // A flag's bad value is quoted, so a newline in it stays on the line.
        #expect(errorLine(["serve"], ["RESTOCK_STANDBY": "x\nerror: injected"]) == #"RESTOCK_STANDBY must be true or false (or 1 or 0, yes or no), not "x\nerror: injected""#)
    }

    @Test("a config file's values are typed as the options are: true or false for a flag only, numbers as written, UTF-8 text, a byte-order mark passed over (found by an outside trial: {\"store\": true} ran store true)")
    func typedConfigValues() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        func line(_ text: String, _ arguments: [String] = ["serve"]) throws -> String? {
            try Data(text.utf8).write(to: file)
            return errorLine(arguments + ["--config", file.path], [:])
        }
        #expect(try line(#"{"store": true}"#) == "store in \(file.path) must be a string or a number, not true")
        #expect(try line(#"{"standby": 1e0}"#) == "standby in \(file.path) must be true or false, not the number 1e0")
        #expect(try line(#"{"drain-timeout": null}"#) == "drain-timeout in \(file.path) must be a string or a number, not null")
        #expect(try line(#"{"max-watches": 1e3}"#)?.hasPrefix("max-watches in \(file.path) must be a whole number") == true)
        #expect(try line(#"{"mqtt-version": 5.0}"#) == #"mqtt-version in \#(file.path) must be 5 or 3.1.1, not "5.0""#)
        #expect(try line(#"{"a\nb": 1}"#) == #"the config file \#(file.path) names no option "a\nb""#)
        #expect(try line("\u{FEFF}{\"standby\": \"yes\", \"log-level\": \"debug\"}") == nil)
        try Data([0x7B, 0x22, 0x75, 0x73, 0x65, 0x72, 0x6E, 0x61, 0x6D, 0x65, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]).write(to: file)  // {"username":"\xFF"}
        #expect(errorLine(["inventory", "--config", file.path], [:]) == "the config file \(file.path) is not UTF-8 text: write it in UTF-8")
    }

    @Test("the default data directory is $XDG_STATE_HOME/restock/STORE, else $HOME/.local/state/restock/STORE; an empty or relative variable is passed over (an empty one put the store in the working directory: an outside trial)")
    func defaultDataDirectory() {
        func path(_ environment: [String: String]) -> String { Restock.Serve.defaultDataDirectory(for: "s", environment: environment).path }
        #expect(path(["XDG_STATE_HOME": "/x/state", "HOME": "/h"]) == "/x/state/restock/s")
        #expect(path(["XDG_STATE_HOME": "", "HOME": "/h"]) == "/h/.local/state/restock/s")
        #expect(path(["XDG_STATE_HOME": "relative", "HOME": "/h"]) == "/h/.local/state/restock/s")
        #expect(path(["HOME": "/h"]) == "/h/.local/state/restock/s")
        #expect(path(["HOME": ""]).hasSuffix("/.local/state/restock/s") && path(["HOME": ""]).hasPrefix("/"))
    }

    @Test("the fourth outside trial of the options: the broker URL's user name is checked as --username is, naming --broker; a password given twice must agree; the environment sets aside the file's alternative as the command line does; a flag set false is not named as given")
    func fourthTrial() throws {
        #expect(errorLine(["inventory", "--broker", "mqtt://a%09b:p@127.0.0.1:1"], [:]) == "--broker: the URL's user name holds a control character (a newline, a tab), which MQTT does not take")
        #expect(errorLine(["inventory"], ["RESTOCK_BROKER": "mqtt://a%00b@127.0.0.1:1"]) == "RESTOCK_BROKER: the URL's user name holds a control character (a newline, a tab), which MQTT does not take")
        #expect(errorLine(["inventory", "--broker", "mqtt://\(String(repeating: "u", count: 65_536))@127.0.0.1:1"], [:]) == "--broker: the URL's user name is longer than 65,535 bytes, MQTT's limit")
        #expect(errorLine(["inventory", "--broker", "mqtt://u:p@127.0.0.1:1", "--password", "q"], [:]) == "--password and the broker URL's password differ: give the password once")
        #expect(errorLine(["inventory", "--broker", "mqtt://u:p@127.0.0.1:1", "--password", "p"], [:]) == nil)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"set": 5, "expires-at": "2999-01-01T00:00:00Z"}"#.utf8).write(to: file)
        let stock = try OptionSources(["stock", "--sku", "x", "--config", file.path], environment: ["RESTOCK_ADD": "2"], commands: Self.commands)
        #expect(stock.arguments.contains("--add=2") && !stock.arguments.contains("--set=5"), "\(stock.arguments)")
        #expect(errorLine(["stock", "--sku", "x", "--config", file.path], ["RESTOCK_ADD": "2"]) == nil)
        #expect(errorLine(["subscribe", "--customer", "c", "--sku", "s", "--config", file.path], ["RESTOCK_EXPIRES_IN": "1h"]) == nil)
        #expect(errorLine(["unsubscribe", "--customer", "c"], ["RESTOCK_ALL": "0"]) == "give --sku SKU or --all")
    }
}
