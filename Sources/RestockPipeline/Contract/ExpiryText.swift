import Foundation

/// Durations and times as an operator or a customer writes them for expiry (`restock serve --watch-lifetime 180d`,
/// `restock subscribe --expires-in 2h` or `--expires-at 2027-05-20T12:00:00Z`): read without trapping, whatever the
/// text, and refused with one sentence.
public enum ExpiryText {
    /// The longest duration taken: 100 years of 365 days.
    public static let maximumSeconds: Int64 = 100 * 365 * 86_400

    /// Why a text is not a duration or a time.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        /// One sentence naming the text and the form.
        public let description: String
    }

    /// `N` followed by `s`, `m`, `h` or `d` (seconds when it has no unit), N a whole number from 1: at most
    /// ``maximumSeconds`` in all.
    /// - Throws: ``Invalid`` for anything else, a huge number included.
    public static func seconds(_ text: String, option: String) throws(Invalid) -> Int64 {
        let invalid = Invalid(
            description:
                "\(option) must be a whole number of seconds, minutes, hours or days from 1 s to 100 years, such as 90s, 30m, 12h or 180d, not \(String(reflecting: String(text.prefix(40))))"
        )
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, !last.isNumber {
            switch last {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3_600
            case "d": unit = 86_400
            default: throw invalid
            }
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let count = Int64(digits) else { throw invalid }
        let (seconds, overflow) = count.multipliedReportingOverflow(by: unit)
        guard !overflow, (1...maximumSeconds).contains(seconds) else { throw invalid }
        return seconds
    }

    /// An RFC 3339 time in UTC, as a subscribe's `expiresAt` takes it (`2027-05-20T12:00:00Z`, a fraction allowed).
    /// - Throws: ``Invalid`` for anything else.
    public static func time(_ text: String, option: String) throws(Invalid) -> Date {
        guard let date = RFC3339.date(text) else {
            throw Invalid(
                description: "\(option) must be a time in UTC as RFC 3339 writes it, such as 2027-05-20T12:00:00Z, not \(String(reflecting: String(text.prefix(40))))")
        }
        return date
    }
}
