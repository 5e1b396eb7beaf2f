/// The value of one member of a request object, as ``StrictJSON`` read it.
///
/// No request field takes an array or an object, so of those only the kind is kept: a field given one is
/// refused for its type, and an unknown field holding one is ignored.
package enum JSONValue: Sendable, Hashable {
    /// A string, its escapes resolved.
    case string(String)
    /// A number, as written.
    case number(JSONNumber)
    case bool(Bool)
    case null
    case array
    case object

    /// What the value is, for a message: `a string`, `the number 1e3`, `true`, `null`, `an array`.
    package var kind: String {
        switch self {
        case .string: "a string"
        case .number(let number): "the number \(number)"
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON number kept as written and judged exactly from its text (docs/contract.md, "How a request payload
/// is read", point 5): `1e3`, `1.000e3` and `100e-2` are whole, `1.0000000000000001` and `1e-400` are not,
/// and `1e400` is a whole number beyond `Int`.
///
/// No `Double` and no arithmetic that can overflow: the digits are counted, not multiplied, until the number
/// is known to fit in 19 decimal digits, so `1e99999999999999999999999` is judged as quickly as `1e3`.
package struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// What the number is.
    package enum Value: Sendable, Hashable {
        /// A whole number that fits in `Int` (`-0` and `0e5` are 0).
        case integer(Int)
        /// A whole number below `Int.min` or above `Int.max`.
        case beyondInt(negative: Bool)
        /// A number with a fractional part.
        case fraction
    }

    /// The number as written.
    package let literal: String
    package let value: Value

    /// How many characters of a literal a message shows (a request may hold a number 4,000 digits long).
    static let shownLength = 40

    /// The literal for a message, cut short when it is long.
    package var description: String {
        literal.count > Self.shownLength ? String(literal.prefix(Self.shownLength)) + "…" : literal
    }

    /// The number `text` writes, or `nil` when it is not a JSON number (RFC 8259:
    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`).
    package init?(_ text: String) {
        self.init(literal: Array(text.utf8)[...])
    }

    /// The number `literal` writes, or `nil` when it is not a JSON number.
    package init?(literal: ArraySlice<UInt8>) {
        var index = literal.startIndex
        func digits() -> Range<Int> {
            let start = index
            while index < literal.endIndex, literal[index].isDigit { index += 1 }
            return start..<index
        }
        let negative = index < literal.endIndex && literal[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let whole = digits()
        guard !whole.isEmpty, whole.count == 1 || literal[whole.lowerBound] != UInt8(ascii: "0") else { return nil }
        var fraction = index..<index
        if index < literal.endIndex, literal[index] == UInt8(ascii: ".") {
            index += 1
            fraction = digits()
            guard !fraction.isEmpty else { return nil }
        }
        var exponentNegative = false
        var exponent = index..<index
        if index < literal.endIndex, literal[index] == UInt8(ascii: "e") || literal[index] == UInt8(ascii: "E") {
            index += 1
            if index < literal.endIndex, literal[index] == UInt8(ascii: "+") || literal[index] == UInt8(ascii: "-") {
                exponentNegative = literal[index] == UInt8(ascii: "-")
                index += 1
            }
            exponent = digits()
            guard !exponent.isEmpty else { return nil }
        }
        guard index == literal.endIndex else { return nil }
        self.literal = String(decoding: literal, as: UTF8.self)
        self.value = Self.judge(
            literal, negative: negative, whole: whole, fraction: fraction, exponent: exponent, exponentNegative: exponentNegative)
    }

    /// The number is ±M × 10^(E − F): M the digits of the whole and fractional parts together, F how many
    /// of them are fractional, E the exponent.
    private static func judge(
        _ literal: ArraySlice<UInt8>, negative: Bool, whole: Range<Int>, fraction: Range<Int>, exponent: Range<Int>,
        exponentNegative: Bool
    ) -> Value {
        let count = whole.count + fraction.count
        func digit(_ position: Int) -> UInt8 {
            let byte = position < whole.count ? literal[whole.lowerBound + position] : literal[fraction.lowerBound + position - whole.count]
            return byte &- UInt8(ascii: "0")
        }
        guard let first = (0..<count).first(where: { digit($0) != 0 }),
            let last = (0..<count).last(where: { digit($0) != 0 })
        else { return .integer(0) }
        // Trailing zeros of M move into the scale, so M's last digit is not 0: a negative scale then always
        // leaves a fraction.
        let significant = last - first + 1
        let trailingZeros = count - 1 - last
        // The exponent saturates at 10^17: a literal held in memory is far shorter than that, so beyond it the
        // verdict (beyond Int when positive, a fraction when negative) is that of the exact exponent.
        var magnitude = 0
        for position in exponent where magnitude < 100_000_000_000_000_000 {
            magnitude = magnitude * 10 + Int(literal[position] &- UInt8(ascii: "0"))
        }
        let scale = (exponentNegative ? -magnitude : magnitude) - fraction.count + trailingZeros
        guard scale >= 0 else { return .fraction }
        // Int.max has 19 digits: a number of 20 or more is beyond it, and one of at most 19 fits in UInt64.
        guard significant + scale <= 19 else { return .beyondInt(negative: negative) }
        var value: UInt64 = 0
        for position in first...last { value = value * 10 + UInt64(digit(position)) }
        for _ in 0..<scale { value *= 10 }
        if value <= UInt64(Int.max) { return .integer(negative ? -Int(value) : Int(value)) }
        if negative, value == UInt64(Int.max) + 1 { return .integer(.min) }
        return .beyondInt(negative: negative)
    }
}

extension UInt8 {
    var isDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
    var isHexDigit: Bool {
        isDigit || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
