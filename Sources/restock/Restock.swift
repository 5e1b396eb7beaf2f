import ArgumentParser
import Foundation
import RestockMQTT
import RestockPipeline

/// `restock`: the back-in-stock alert service over MQTT, from the command line.
@main
struct Restock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restock",
        abstract: "Back-in-stock alerts over MQTT: run a store, subscribe customers, restock, listen.",
        discussion: """
            Customers watch sold-out SKUs; when stock arrives the store alerts them in signup order, each on
            their own topic. Every command that talks to a broker takes the connection options below.
            """,
        version: RestockVersion.current,
        subcommands: [
            Serve.self, Backup.self, Subscribe.self, Unsubscribe.self, Listen.self, Stock.self, Inventory.self, Watching.self, Forget.self,
            Report.self, DeadLetters.self, Export.self,
            Demo.self,
        ])

    /// Runs the command; any error is one plain line on stderr and a non-zero exit (README.md, "The restock command line").
    static func main() async {
        if let given = notUTF8() {
            StandardStreams.printError("error: \(given) is not valid UTF-8: give paths and values in UTF-8")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        var sources: OptionSources?
        do {
            sources = try OptionSources(
                Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment,
                commands: configuration.subcommands)
            OptionSources.setAsideInThisRun.withLock { $0 = sources?.setAside ?? [] }
            var command = try parseAsRoot(sources?.arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }  // --help, --version
            if error is ExitCode { Foundation.exit(code.rawValue) }  // already explained
            let given = sources?.arguments ?? Array(CommandLine.arguments.dropFirst())
            let line = Restock.oneLine(Restock.emptyNamed(Restock.message(for: error), given: given), naming: given) ?? "\(error)"
            let message = sources?.describe(line) ?? line
            StandardStreams.printError("error: \(message)")
            Foundation.exit(code.rawValue)
        }
    }

    /// The first command-line argument, or `RESTOCK_*` variable, whose bytes are not UTF-8, as an error names it: Swift's
    /// strings replace such bytes (with U+FFFD), and a path so changed names another file (found by an outside trial: a
    /// store made a new directory beside the one given, and export read another).
    static func notUTF8() -> String? {
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index], String(validatingCString: raw) == nil else { continue }
            return "argument \(index) (\(StoredValues.inLine(String(cString: raw))))"
        }
        var entry = environ
        while let pointer = entry.pointee {
            defer { entry += 1 }
            guard strncmp(pointer, "RESTOCK_", 8) == 0, String(validatingCString: pointer) == nil else { continue }
            return String(String(cString: pointer).prefix { $0 != "=" })
        }
        return nil
    }

    /// swift-argument-parser's refusal of an empty value for a typed option (`The value '' is invalid for '--wait
    /// <wait>'`) said as the other options' own refusals say it (an outside trial); any other message as it is.
    /// So is its refusal of `--option=` with nothing after the `=` in `given` (`Missing value for '--customer-rate
    /// <customer-rate>'`: an outside trial), but not of an option given last with no value at all.
    static func emptyNamed(_ message: String, given: [String] = []) -> String {
        if let match = message.wholeMatch(of: /The value '' is invalid for '(--[a-z0-9-]+) <[a-z0-9-]+>'/) { return emptyValueLine(match.1) }
        if let match = message.wholeMatch(of: /Missing value for '(--[a-z0-9-]+) <[a-z0-9-]+>'/), given.contains("\(match.1)=") {
            return emptyValueLine(match.1)
        }
        return message
    }

    /// The first line of `message`, with each value of `arguments` it names that holds a character that does not show as
    /// itself (a newline, an escape) quoted and escaped (``StoredValues/inLine(_:)``): a path given with a newline
    /// would end the line before the reason, and an escape sequence would reach the terminal.
    static func oneLine(_ message: String, naming arguments: [String]) -> String? {
        let values = arguments.flatMap { argument in
            argument.hasPrefix("--") ? argument.split(separator: "=", maxSplits: 1).dropFirst().map(String.init) : [argument]
        }
        let escaped = values.filter { !$0.isEmpty && StoredValues.inLine($0) != $0 }.sorted { $0.count > $1.count }.reduce(message) {
            $0.replacingOccurrences(of: $1, with: StoredValues.inLine($1))
        }
        return escaped.split(separator: "\n").first.map(String.init)
    }
}
