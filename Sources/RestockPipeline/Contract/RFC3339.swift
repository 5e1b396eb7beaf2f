import Foundation

/// Reads the one form of time a request may carry: RFC 3339 in UTC, `2026-11-21T19:41:47Z` or with a fraction of
/// a second (1 to 9 digits, `2026-11-21T19:41:47.528Z`, read to the millisecond), years 1970 through 9999. Strict by hand, so nothing an
/// outside client writes can trap or be read two ways (a `+01:00` offset, a lower-case `t`, a leap second: refused).
enum RFC3339 {
    /// The time `text` names, or `nil` when it is not of that form or names no real time (February 30).
    static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 30, bytes.last == UInt8(ascii: "Z") else { return nil }
        func digits(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func byte(_ index: Int, is character: Character) -> Bool { bytes[index] == character.asciiValue }
        guard byte(4, is: "-"), byte(7, is: "-"), byte(10, is: "T"), byte(13, is: ":"), byte(16, is: ":"),
            let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
            let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19),
            (1970...9999).contains(year), (1...12).contains(month), (1...daysIn(month, of: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var milliseconds = 0
        if bytes.count > 20 {
            // `.` then 1 to 9 digits, before the `Z`; kept to the millisecond, cut (never rounded up: 9999-12-31T23:59:59.9996Z
            // would become a year of five digits, found by the outside trial), in integers, so that no binary fraction
            // moves it to the millisecond before.
            guard byte(19, is: "."), bytes.count >= 22, let first = digits(20..<min(23, bytes.count - 1)) else { return nil }
            guard bytes.count - 1 <= 23 || digits(23..<(bytes.count - 1)) != nil else { return nil }
            let written = min(3, bytes.count - 21)
            milliseconds = first * [100, 10, 1][written - 1]
        }
        let fraction = Double(milliseconds) / 1_000
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = Double(days * 86_400 + hour * 3_600 + minute * 60 + second) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    private static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`); the
    /// year is at most 9999, so nothing here can overflow.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
