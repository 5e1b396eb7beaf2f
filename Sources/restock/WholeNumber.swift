import ArgumentParser
import RestockCore

/// A whole-number option as typed, read as a number when it is checked against its range (``checked(_:option:)``): a
/// value past `Int`'s range, or not a number at all, gets the same one line as one out of the contract's range, where
/// ArgumentParser's own refusal would say only that the value is invalid.
struct WholeNumber: ExpressibleByArgument {
    /// What was given.
    let text: String

    init(argument: String) { text = argument }

    /// The value `value`, as a default.
    init(_ value: Int) { text = String(value) }

    var defaultValueDescription: String { text }

    /// The number, when it is in `range`.
    /// - Throws: `ValidationError` naming `--option`, its range and what was given (its first 40 characters).
    func checked(_ range: ClosedRange<Int>, option: String) throws -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw ValidationError("--\(option) must be from \(RequestLimits.describe(range)), not \(Int(text).map(String.init) ?? quotedValue(text))")
        }
        return value
    }
}
