import ArgumentParser
import Foundation
import RestockPipeline
import Synchronization

/// Where an option's value comes from when the command line does not give it (docs/operations.md, "Configuration"):
/// the environment variable named after it (`--drain-timeout` → `RESTOCK_DRAIN_TIMEOUT`), then the JSON file of
/// `--config FILE` (or `RESTOCK_CONFIG`), then the option's default.
///
/// Each value found is handed to swift-argument-parser as if typed on the command line (`--drain-timeout=7`), so it is
/// parsed and validated exactly like the option; an error about it names where it came from instead
/// (``describe(_:)``). swift-configuration is not used: it reads typed values and would validate them a second way,
/// apart from the options' own checks and their one-line errors.
struct OptionSources {
    /// The arguments to parse: the command line, then a `--name=value` (or `--name`, for a flag) for each value
    /// taken from the environment or the file.
    private(set) var arguments: [String]
    /// Where each option filled in came from, by name: `RESTOCK_DRAIN_TIMEOUT`, or `drain-timeout in FILE`; and its value.
    private(set) var origins: [String: (origin: String, value: String)] = [:]

    /// Each value the environment or the config file gives that a source before it sets aside, in one line:
    /// `drain-timeout in FILE is set aside: RESTOCK_DRAIN_TIMEOUT gives it` (serve logs them at start-up: an operator who
    /// changed the file saw nothing of the change, and nothing said why).
    private(set) var setAside: [String] = []

    /// Options that give one value two ways: at most one of each set may be given.
    static let alternatives: [Set<String>] = [["expires-at", "expires-in"], ["set", "add"], ["sku", "all"]]

    /// The environment variable of option `name`: `RESTOCK_` and the name in capitals, `-` as `_`.
    static func variable(_ name: String) -> String { "RESTOCK_" + name.uppercased().replacingOccurrences(of: "-", with: "_") }

    /// Fills in, for the subcommand `arguments` name, every option the command line leaves out and `environment` or
    /// the config file gives.
    /// - Throws: `ValidationError` naming the variable or the file when a flag's value is not true or false, or the
    ///   file cannot be read, is not a JSON object of options, or names an option no command has.
    init(_ arguments: [String], environment: [String: String], commands: [any ParsableCommand.Type]) throws {
        self.arguments = arguments
        guard let name = arguments.first, let command = commands.first(where: { $0._commandName == name }),
            !arguments.contains(where: { $0 == "--help" || $0 == "-h" })
        else { return }
        let given = Set(arguments.compactMap { $0.hasPrefix("--") ? String($0.dropFirst(2).prefix { $0 != "=" }) : nil })
        let file = try Self.configFile(arguments, environment: environment, commands: commands)
        if environment[Self.variable("config")] != nil, given.contains("config") {
            setAside.append("\(Self.variable("config")) is set aside: --config on the command line gives it")
        }
        // An option whose alternative is on the command line is not filled in: the command line wins. Likewise the
        // environment over the file (RESTOCK_ADD beside "set" in the file read "give exactly one of set in FILE N and
        // RESTOCK_ADD N": an outside trial).
        let options = OptionNames.of(command).filter { $0.name != "config" }
        let settled = Self.withAlternatives(given)
        let inEnvironment = options.filter { environment[Self.variable($0.name)] != nil }
        let fromEnvironment = inEnvironment.filter { !settled.contains($0.name) }
        for option in inEnvironment where settled.contains(option.name) {
            setAside.append("\(Self.variable(option.name)) is set aside: \(Self.giver(of: option.name, among: given) { _ in true }) gives it")
        }
        for option in fromEnvironment { try add(option, environment[Self.variable(option.name)] ?? "", from: Self.variable(option.name)) }
        guard let file else { return }
        let taken = given.union(fromEnvironment.map(\.name))
        let settledBeforeFile = Self.withAlternatives(taken)
        for option in options {
            guard let value = file.values[option.name] else { continue }
            guard settledBeforeFile.contains(option.name) else {
                try add(option, value, from: "\(option.name) in \(file.path)")
                continue
            }
            let giver = Self.giver(of: option.name, among: taken, onCommandLine: given.contains)
            setAside.append("\(option.name) in \(file.path) is set aside: \(giver) gives it")
        }
    }

    /// What gives option `name`'s value instead, of the options `given`: the option or its alternative, on the command line
    /// (`onCommandLine`) or as its variable.
    private static func giver(of name: String, among given: Set<String>, onCommandLine: (String) -> Bool) -> String {
        let alternative = alternatives.first { $0.contains(name) }.map { $0.intersection(given).sorted().first } ?? nil
        let giver = given.contains(name) ? name : alternative ?? name
        return onCommandLine(giver) ? "--\(giver) on the command line" : variable(giver)
    }

    /// `names` with every option that gives one of their values another way (``alternatives``).
    private static func withAlternatives(_ names: Set<String>) -> Set<String> {
        names.union(alternatives.filter { !$0.isDisjoint(with: names) }.flatMap { $0 })
    }

    private mutating func add(_ option: OptionNames.Option, _ value: String, from origin: String) throws {
        // A flag set false adds nothing, and is not named as where the option came from (RESTOCK_ALL=0 read "give --sku
        // SKU or RESTOCK_ALL": an outside trial).
        if !(option.isFlag && ["false", "0", "no"].contains(value.lowercased())) { origins[option.name] = (origin, value) }
        // An empty value on its own, so that the command says what it says of one on the command line (`--data is
        // empty: …`, named by its origin), not "Missing value for" the variable (found by an outside trial); any other
        // after `=`, so that a value that starts with `-` is not taken for an option.
        guard option.isFlag else { return arguments += value.isEmpty ? ["--\(option.name)", ""] : ["--\(option.name)=\(value)"] }
        switch value.lowercased() {
        case "true", "1", "yes": arguments.append("--\(option.name)")
        case "false", "0", "no": break
        // Taken for false, `RESTOCK_STANDBY=` started a live store where a standby may have been meant (an outside trial).
        case "": throw ValidationError("\(origin) is empty: give true or false, or leave it out")
        default: throw ValidationError("\(origin) must be true or false (or 1 or 0, yes or no), not \(quotedValue(value))")
        }
    }

    /// The most a config file may hold: options fill a few hundred bytes.
    static let configFileLimit = 1 << 20

    /// The bytes of the config file at `path`, at most ``configFileLimit``; the system's reason when it cannot be read
    /// (Foundation said "You don't have permission" for /dev/null as root, "error 256" for a directory and for
    /// /proc/self/mem: found by outside trials), an end to a file that never ends (`/dev/zero`), and a refusal of what
    /// is not a file, which would keep the command waiting for ever (a FIFO no one writes).
    private static func readConfigFile(_ path: String) throws -> Data {
        func refusal(_ reason: String) -> ValidationError { ValidationError("cannot read the config file \(path): \(reason)") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw refusal(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw refusal(String(cString: strerror(errno))) }
        switch status.st_mode & S_IFMT {
        case S_IFREG, S_IFCHR: break  // a file; /dev/null reads as an empty one, /dev/zero is cut at the limit
        case S_IFDIR: throw refusal(String(cString: strerror(EISDIR)))
        default: throw refusal("it is not a file (a FIFO or a socket)")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while data.count <= configFileLimit {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw refusal(String(cString: strerror(errno))) }
            if count == 0 { break }
            data.append(contentsOf: buffer[..<count])
        }
        guard data.count <= configFileLimit else { throw ValidationError("the config file \(path) is larger than 1 MiB: it holds options only") }
        return data
    }

    /// The values of the config file (`--config`, else `RESTOCK_CONFIG`), as strings, by option name.
    private static func configFile(
        _ arguments: [String], environment: [String: String], commands: [any ParsableCommand.Type]
    ) throws -> (path: String, values: [String: String])? {
        var path = environment[variable("config")]
        for (index, argument) in arguments.enumerated() {
            if argument.hasPrefix("--config=") { path = String(argument.dropFirst("--config=".count)) }
            if argument == "--config", index + 1 < arguments.count { path = arguments[index + 1] }
        }
        guard let path else { return nil }
        guard !path.isEmpty else {
            let origin = arguments.contains(where: { $0 == "--config" || $0.hasPrefix("--config=") }) ? "--config" : variable("config")
            throw ValidationError("\(origin) is empty: give a JSON file of options, or leave it out")
        }
        var data = [UInt8](try readConfigFile(path))
        // A byte-order mark, which some editors write, is passed over (RFC 8259 lets a parser ignore one).
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { data.removeFirst(3) }
        // Its strings become arguments, which must be UTF-8 as the command line's are (`Restock.notUTF8()`).
        guard String(validating: data, as: UTF8.self) != nil else {
            throw ValidationError("the config file \(path) is not UTF-8 text: write it in UTF-8")
        }
        // Read as strictly as a request (StrictJSON): Foundation took the first of two values of one option without a
        // word, and a trailing comma (found by an outside trial).
        let members: [StrictJSON.Member]
        do { members = try StrictJSON.members(in: data) } catch {
            throw ValidationError("the config file \(path) is not valid JSON: \(error.reason.replacingOccurrences(of: "the payload", with: "the file"))")
        }
        let shape = "the config file \(path) is not a JSON object of options with a string, a number or true or false each, such as {\"drain-timeout\": 10}"
        guard data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") else { throw ValidationError(shape) }
        let options = Dictionary(commands.flatMap { OptionNames.of($0).map { ($0.name, $0.isFlag) } }, uniquingKeysWith: { $0 || $1 })
        var values: [String: String] = [:]
        for member in members {
            guard let isFlag = options[member.name], member.name != "config" else {
                throw ValidationError("the config file \(path) names no option \(StoredValues.inLine(member.name))")
            }
            values[member.name] = try Self.text(of: member.value, isFlag: isFlag, origin: "\(member.name) in \(path)")
        }
        return (path, values)
    }

    /// A config file's value as the command line would give it: a number as written (`1e3` is refused where the command
    /// line refuses it), true or false for a flag only, and a flag's value true, false or a string as a variable's
    /// (`{"store": true}` ran store `true`, and `{"standby": 1e0}` was taken for true: found by an outside trial).
    private static func text(of value: JSONValue, isFlag: Bool, origin: String) throws -> String {
        switch value {
        case .string(let text): return text
        case .bool(let flag) where isFlag: return flag ? "true" : "false"
        case .number(let number) where !isFlag: return number.literal
        case .bool, .number, .null, .array, .object:
            throw ValidationError("\(origin) must be \(isFlag ? "true or false" : "a string or a number"), not \(value.kind)")
        }
    }

    /// An error's line with every option filled in here named by where it came from:
    /// `--drain-timeout must be …` becomes `RESTOCK_DRAIN_TIMEOUT must be …`; an error that names no option but quotes
    /// a value filled in here (a bad broker URL) starts with where the value came from.
    func describe(_ message: String) -> String {
        // A command the line quotes in backquotes is left as written: "start it with `restock serve --store t53`" read
        // "`restock serve RESTOCK_STORE t53`" (an outside trial).
        let named = message.split(separator: "`", omittingEmptySubsequences: false).enumerated().map { index, part in
            guard index.isMultiple(of: 2) else { return String(part) }
            return origins.reduce(String(part)) { line, entry in
                Self.replacingOption(
                    entry.key, with: entry.value.origin,
                    in: line.replacingOccurrences(of: "'--\(entry.key) <\(entry.key)>'", with: entry.value.origin))
            }
        }.joined(separator: "`")
        guard named == message,
            let source = origins.first(where: { Self.isAbout(message, option: $0.key, value: $0.value.value) })?.value
        else { return named }
        return "\(source.origin): \(message)"
    }

    /// `line` with each `--name` replaced by `origin`, but where it begins a longer option's name: `--data` is not the
    /// start of `--database` (RESTOCK_DATA made "RESTOCK_DATAbase" of it: found by an outside trial).
    static func replacingOption(_ name: String, with origin: String, in line: String) -> String {
        let token = "--" + name
        var result = "", rest = line[...]
        while let found = rest.range(of: token) {
            let next = rest[found.upperBound...].first
            let endsHere = next.map { !($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") } ?? true
            result += rest[..<found.lowerBound] + (endsHere ? origin : token)
            rest = rest[found.upperBound...]
        }
        return result + rest
    }

    /// Whether an error `message` that no option filled in here was named in is about `option`'s `value`: it names no
    /// option and quotes the value, or, for the broker, it is a broker URL's or list's configuration error (an error
    /// about one URL of a list quotes that URL alone, and one about the list's credentials names the options to use).
    private static func isAbout(_ message: String, option: String, value: String) -> Bool {
        guard !value.isEmpty else { return false }
        if !message.contains("--"), message.contains("\"\(value)\"") { return true }
        return option == "broker"
            && ["invalid configuration: broker URL", "invalid configuration: broker port", "invalid configuration: the broker list"]
                .contains { message.contains($0) }
    }
}

extension OptionSources {
    /// ``setAside`` of the command this process runs, for `serve` to log once its log is set up.
    static let setAsideInThisRun = Mutex<[String]>([])
}
