import ArgumentParser

/// A number of seconds as typed, read as a number when it is checked against its range (``checked(_:option:)``): a plain
/// decimal number only — `5`, `0.5`, `2e1` — where `Double`'s own reading took `0x10` for sixteen and `inf` for ever
/// (found by an outside trial: `--drain-timeout 0x10` started a store), and where ArgumentParser's refusal of a word
/// said only that the value is invalid.
struct Seconds: ExpressibleByArgument, Sendable {
    /// What was given.
    let text: String

    init(argument: String) { text = argument }

    /// `value` seconds, as a default.
    init(_ value: Int) { text = String(value) }

    var defaultValueDescription: String { text }

    /// The seconds, when they are a plain decimal number in `range`.
    /// - Throws: `ValidationError` naming `--option`, its range and what was given (as typed: quoted when not a number).
    func checked(_ range: ClosedRange<Double>, option: String) throws -> Double {
        if text.isEmpty { throw emptyOption(option) }
        let decimal = text.wholeMatch(of: /[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/) != nil
        if decimal, let value = Double(text), value.isFinite, range.contains(value) { return value }
        let given = decimal ? text : quotedValue(text)
        throw ValidationError("--\(option) must be a number of seconds from \(Self.written(range.lowerBound)) to \(Self.written(range.upperBound)), not \(given)")
    }

    /// `value` as the range is written: `0.1`, `3600`.
    private static func written(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
