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

    /// Text of a row left out, for the line that names it (the store's log, `restock export`'s stderr): quoted and
    /// escaped as a Swift string literal, so that a newline or a terminal's escape sequence in a row changed by hand stays
    /// on its line and says nothing, and cut after ``describedCharacters`` characters, its length in bytes said instead.
    package static func described(_ text: String) -> String {
        guard text.utf8.count > describedCharacters else { return String(reflecting: text) }
        return "\(String(reflecting: String(text.prefix(describedCharacters))))… (\(text.utf8.count) bytes)"
    }

    /// How many characters of a text value a line that names a row left out shows.
    package static let describedCharacters = 100
}
