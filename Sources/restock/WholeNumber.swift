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
        try checked(range, option: option) { given in
            // Digits past Int's range are a number out of range; anything else (`1e3`, `1.5`, `two`, `+5`) is not a whole
            // number, which a request's JSON may write otherwise, but the command line takes in digits only.
            let unsigned = text.first == "-" ? text.dropFirst() : Substring(text)
            let isDigits = !unsigned.isEmpty && unsigned.allSatisfy { ("0"..."9").contains($0) }
            let what = isDigits ? "from" : "a whole number (in digits) from"
            return "--\(option) must be \(what) \(RequestLimits.describe(range)), not \(given)"
        }
    }

    /// The number as typed, and as the refusal writes it: digits, after a `-` for a negative number, as every number of
    /// the command line is read (the seconds, `--max-watches`, `--customer-rate`): `+5` was taken here and refused there,
    /// and `-0` taken for 0 by options that take no negative number (an outside trial). `nil` when it is not one.
    private func number() -> (value: Int, written: String)? {
        let isNegative = text.first == "-"
        let digits = isNegative ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }), let value = Int(text) else { return nil }
        return (value, isNegative && value == 0 ? "-0" : String(value))
    }

    /// Whether `number` is in `range`: a minus sign makes a number negative even before a zero.
    private func number(_ number: (value: Int, written: String), isIn range: ClosedRange<Int>) -> Bool {
        range.contains(number.value) && !(number.written.hasPrefix("-") && range.lowerBound >= 0)
    }
}

extension WholeNumber {
    /// The number, when it is in `range`; otherwise the option's own line, `refusal` of what was given (a number, or the
    /// text quoted, as ``checked(_:option:)`` says it): a value past `Int`'s range got ArgumentParser's "is invalid"
    /// line (an outside trial).
    func checked(_ range: ClosedRange<Int>, option: String, refusal: (String) -> String) throws -> Int {
        if text.isEmpty { throw emptyOption(option) }
        let given = number()
        if let given, number(given, isIn: range) { return given.value }
        throw ValidationError(refusal(given?.written ?? quotedValue(text)))
    }
}

/// The refusal of an empty value of `--option` (or `option` as its origin names it), as every typed option says it.
func emptyOption(_ option: String) -> ValidationError { ValidationError(emptyValueLine("--\(option)")) }

/// The line that refuses an empty value of `option`.
func emptyValueLine(_ option: some StringProtocol) -> String { "\(option) is empty: give a value, or leave it out" }
