import ArgumentParser

/// The options a command declares, found from the command itself (its `@Option`s and `@Flag`s, and those of its
/// `@OptionGroup`s), so that a new option gets its environment variable and its key in the config file without a list
/// to keep in step. Names follow swift-argument-parser's default: `drainTimeout` is `--drain-timeout`.
enum OptionNames {
    struct Option: Equatable {
        /// The long name, without `--`.
        let name: String
        /// Whether it is a flag (no value: `--standby`).
        let isFlag: Bool
    }

    /// The options of `command`, in declaration order.
    static func of(_ command: any ParsableArguments.Type) -> [Option] {
        Mirror(reflecting: command.init()).children.flatMap { child -> [Option] in
            guard let label = child.label, label.hasPrefix("_") else { return [] }
            if let group = child.value as? any NestedOptions { return of(group.optionsType) }
            let kind = String(describing: type(of: child.value))
            guard kind.hasPrefix("Option<") || kind.hasPrefix("Flag<") else { return [] }
            return [Option(name: kebab(label.dropFirst()), isFlag: kind.hasPrefix("Flag<"))]
        }
    }

    /// `maxWatchesPerCustomer` → `max-watches-per-customer`.
    static func kebab(_ name: Substring) -> String {
        name.reduce(into: "") { result, character in
            if character.isUppercase { result += "-" + character.lowercased() } else { result.append(character) }
        }
    }
}

/// An `@OptionGroup`, whose options are those of its type.
private protocol NestedOptions {
    var optionsType: any ParsableArguments.Type { get }
}

extension OptionGroup: NestedOptions {
    var optionsType: any ParsableArguments.Type { Value.self }
}
