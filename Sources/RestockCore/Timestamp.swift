import Foundation
import Synchronization

/// RFC 3339 timestamps in UTC with milliseconds, the one date format of every payload.
public enum Timestamp {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
    private static let withoutFraction = Date.ISO8601FormatStyle(timeZone: .gmt)

    /// The last date formatted and its text: the alerts of one stock change share their time.
    private static let lastFormatted = Mutex<(date: Date, text: String)?>(nil)

    /// `2026-11-21T18:35:33.123Z`
    public static func string(from date: Date) -> String {
        if let last = lastFormatted.withLock({ $0 }), last.date == date { return last.text }
        let text = withFraction.format(date)
        lastFormatted.withLock { $0 = (date, text) }
        return text
    }

    /// Parses an RFC 3339 UTC timestamp, with or without fractional seconds.
    public static func date(from text: String) -> Date? {
        (try? withFraction.parse(text)) ?? (try? withoutFraction.parse(text))
    }
}
