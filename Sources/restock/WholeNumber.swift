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
        if let value = Int(text), range.contains(value) { return value }
        // Digits past Int's range are a number out of range; anything else (`1e3`, `1.5`, `two`) is not a whole number,
        // which a request's JSON may write otherwise, but the command line takes in digits only.
        let unsigned = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
        let isDigits = !unsigned.isEmpty && unsigned.allSatisfy { ("0"..."9").contains($0) }
        let what = isDigits ? "from" : "a whole number (in digits) from"
        throw ValidationError("--\(option) must be \(what) \(RequestLimits.describe(range)), not \(Int(text).map(String.init) ?? quotedValue(text))")
    }
}

extension WholeNumber {
    /// The number, when it is in `range`; otherwise the option's own line, `refusal` of what was given (a number, or the
    /// text quoted, as ``checked(_:option:)`` says it): a value past `Int`'s range got ArgumentParser's "is invalid"
    /// line (an outside trial).
    func checked(_ range: ClosedRange<Int>, option: String, refusal: (String) -> String) throws -> Int {
        if text.isEmpty { throw emptyOption(option) }
        if let value = Int(text), range.contains(value) { return value }
        throw ValidationError(refusal(Int(text).map(String.init) ?? quotedValue(text)))
    }
}

/// The refusal of an empty value of `--option` (or `option` as its origin names it), as every typed option says it.
func emptyOption(_ option: String) -> ValidationError { ValidationError(emptyValueLine("--\(option)")) }

/// The line that refuses an empty value of `option`.
func emptyValueLine(_ option: some StringProtocol) -> String { "\(option) is empty: give a value, or leave it out" }
