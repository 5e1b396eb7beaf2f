import Foundation
import RestockCore

/// What a stored value may be for the store to take it back at start-up: a state file or database is outside input
/// (changed by hand, damaged, written by a tool), and a value past these bounds is left out with the rest of its row,
/// named in one log line, before it can reach arithmetic that traps (found by an outside trial: a position of 2^63 − 1
/// in the file made every later request crash the store).
package enum StoredValues {
    /// The largest position or counter taken: 2^62. The store counts up by one per watch or alert from there, and
    /// writes each as a signed 64-bit integer, which it never reaches.
    package static let maximumCounter = Int64(StoreSnapshot.maximumCounter)

    /// A position or counter the store can carry on from.
    package static func isCounter(_ value: Int64) -> Bool { value > 0 && value <= maximumCounter }

    /// A counter of the next position or alert sequence: up to one past the last (a store that gave out the last
    /// position records the next as one past it, and takes no new watch: ``RestockError/noPositionLeft``).
    package static func isNextCounter(_ value: Int64) -> Bool { value > 0 && value <= maximumCounter + 1 }

    /// The times taken for a watch's `since` and `expiresAt`, in seconds since 2001-01-01 (as `Date` keeps them):
    /// 1970 through 9999, the years an RFC 3339 timestamp in a payload can say (a request's `expiresAt` likewise).
    package static let dates: Range<Double> =
        Date(timeIntervalSince1970: 0).timeIntervalSinceReferenceDate..<Date(timeIntervalSince1970: 253_402_300_800).timeIntervalSinceReferenceDate

    /// A time `seconds` since 2001-01-01 that the store can say in a payload.
    package static func isDate(_ seconds: Double) -> Bool { dates.contains(seconds) }

    /// Text of a row left out, for the line that names it (the store's log, `restock export`'s stderr): quoted, with
    /// every character that could end the line, move the cursor, colour or reorder the terminal escaped as in a Swift
    /// literal (`\n`, `\u{1B}`), and cut after ``describedCharacters`` of its Unicode scalars, its length in bytes said
    /// instead. A row changed by hand may hold anything: it must not forge a line, nor run on for megabytes (found by
    /// outside trials: C1 controls such as U+009B, U+0085 and U+2028, and the right-to-left override, were written raw).
    package static func described(_ text: String) -> String { described(text, cutAfter: describedCharacters) }

    /// `text` for a one-line message, such as a path given on the command line named in an error: as it is when each of
    /// its characters shows as itself, else quoted and escaped whole, as ``described(_:)`` escapes (found by an outside
    /// trial: a newline in `restock export --to` ended the error's line before its reason).
    package static func inLine(_ text: String) -> String {
        text.unicodeScalars.allSatisfy(isShownAsIs) ? text : described(text, cutAfter: .max)
    }

    /// `text` with each character that does not show as itself escaped as ``described(_:)`` escapes it, and nothing else
    /// changed (no quotes): for a log line's text, which may name a path or a value read from outside.
    package static func escaped(_ text: String) -> String {
        guard !text.unicodeScalars.allSatisfy(isShownAsIs) else { return text }
        var line = ""
        for scalar in text.unicodeScalars {
            if isShownAsIs(scalar) { line.unicodeScalars.append(scalar) } else { line += escape(scalar) }
        }
        return line
    }

    /// How ``described(_:)`` writes a scalar that does not show as itself.
    private static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        case "\0": "\\0"
        default: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        }
    }

    private static func described(_ text: String, cutAfter characters: Int) -> String {
        var line = "\""
        for (index, scalar) in text.unicodeScalars.enumerated() {
            if index == characters { return line + "\"… (\(text.utf8.count) bytes)" }
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case _ where isShownAsIs(scalar): line.unicodeScalars.append(scalar)
            default: line += escape(scalar)
            }
        }
        return line + "\""
    }

    /// A scalar a terminal shows as a mark of its own: printable ASCII, and beyond it anything but controls (C0, DEL,
    /// C1), format characters (the bidirectional overrides and isolates among them), line and paragraph separators,
    /// surrogates, private use and unassigned code points.
    private static func isShownAsIs(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return (0x20..<0x7F).contains(scalar.value) }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: return false
        default: return true
        }
    }

    /// How many Unicode scalars of a text value a line that names a row left out shows.
    package static let describedCharacters = 100
}
