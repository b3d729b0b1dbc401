import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the dates of HTTP fields (`Date`, `Expires`, `Last-Modified`) in the three forms RFC 9110 §5.6.7 asks a
/// recipient to accept: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and C's asctime form (`Sun Nov  6 08:49:37 1994`). Always UTC, no locale.
package enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The date `text` names, or `nil` when it is none of the three forms (an `Expires: 0`, say).
    package static func parse(_ text: String) -> Date? {
        // Words split on spaces, commas and the RFC 850 form's hyphens; the weekday is not checked (RFC 9110
        // lets a recipient ignore it), the time and the rest are.
        let words = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" || $0 == "\t" })
        let day: Substring, month: Substring, year: Substring, time: Substring
        switch words.count {
        case 6 where words[5] == "GMT":
            // IMF-fixdate and RFC 850: weekday, day, month, year, time, "GMT".
            (day, month, year, time) = (words[1], words[2], words[3], words[4])
        case 5:
            // asctime: weekday, month, day, time, year.
            (month, day, time, year) = (words[1], words[2], words[3], words[4])
        default:
            return nil
        }
        guard let dayNumber = number(day, digits: 1...2), (1...31).contains(dayNumber),
              let monthIndex = months.firstIndex(of: month.lowercased()),
              var yearNumber = number(year, digits: 2...4), year.count != 3 else { return nil }
        if year.count == 2 {
            // RFC 9110: a two-digit year more than 50 years ahead is the most recent past year with those digits.
            yearNumber += 2000
            if yearNumber > currentYear() + 50 { yearNumber -= 100 }
        }
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, let hour = number(clock[0], digits: 2...2), let minute = number(clock[1], digits: 2...2),
              let second = number(clock[2], digits: 2...2), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = Int32(yearNumber - 1900)
        parts.tm_mon = Int32(monthIndex)
        parts.tm_mday = Int32(dayNumber)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(min(second, 59))
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func number(_ text: Substring, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(text)
    }

    private static func currentYear() -> Int {
        var now = time_t(Date().timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&now, &parts)
        return Int(parts.tm_year) + 1900
    }
}
