import FoundationEssentials

/// RFC 6265 §5.1.1's parser for the `Expires` attribute: lenient by design, as servers write dates in many
/// forms (`Wed, 09 Jun 2021 10:18:14 GMT`, `Wednesday, 09-Jun-21 10:18:14 GMT`, `Wed Jun  9 10:18:14 2021`).
enum CookieDate {
    /// The date `text` names, in UTC; `nil` if a part is missing or out of range.
    static func parse(_ text: Substring) -> Date? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in text.utf8.split(whereSeparator: isDelimiter) {
            if time == nil, let found = Self.time(token) {
                time = found
            } else if day == nil, let found = leadingNumber(token, digits: 1...2) {
                day = found
            } else if month == nil, let found = Self.month(token) {
                month = found
            } else if year == nil, let found = leadingNumber(token, digits: 2...4) {
                year = found
            }
        }
        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59,
              day <= daysIn(month: month, year: year) else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E.
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte)
            || (0x5B...0x60).contains(byte) || (0x7B...0x7E).contains(byte)
    }

    /// 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT, then anything not starting with a digit.
    private static func time(_ token: Substring.UTF8View.SubSequence) -> (Int, Int, Int)? {
        let parts = token.split(separator: UInt8(ascii: ":"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let hour = number(parts[0], digits: 1...2, exact: true),
              let minute = number(parts[1], digits: 1...2, exact: true),
              let second = leadingNumber(parts[2], digits: 1...2) else { return nil }
        return (hour, minute, second)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// A token whose first three letters name a month.
    private static func month(_ token: Substring.UTF8View.SubSequence) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }

    /// The token's leading digits as a number when there are `digits` of them and what follows (if anything)
    /// starts with a non-digit.
    private static func leadingNumber(_ token: Substring.UTF8View.SubSequence, digits: ClosedRange<Int>) -> Int? {
        number(token, digits: digits, exact: false)
    }

    private static func number(_ token: Substring.UTF8View.SubSequence, digits: ClosedRange<Int>, exact: Bool) -> Int? {
        let leading = token.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        guard digits.contains(leading.count), !exact || leading.count == token.count else { return nil }
        return leading.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (negative before it).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        // Counted from March, so that the leap day ends the year (H. Hinnant's days-from-civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
