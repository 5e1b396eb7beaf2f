import Foundation

/// RFC 3339 timestamps in UTC with milliseconds, the one date format of every payload.
public enum Timestamp {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
    private static let withoutFraction = Date.ISO8601FormatStyle(timeZone: .gmt)

    /// `2026-11-21T18:35:33.123Z`
    public static func string(from date: Date) -> String { withFraction.format(date) }

    /// Parses an RFC 3339 UTC timestamp, with or without fractional seconds.
    public static func date(from text: String) -> Date? {
        (try? withFraction.parse(text)) ?? (try? withoutFraction.parse(text))
    }
}
