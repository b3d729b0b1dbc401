import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Loader

/// curl's `-z`/`--time-cond`: a time the resource must have been modified after (`If-Modified-Since`) or, written with a
/// leading `-`, not after (`If-Unmodified-Since`). The time is a date, or else the modification time of the file of that
/// name, as curl reads it.
struct TimeCondition: Sendable, Equatable {
    /// Seconds since 1970 (UTC).
    let seconds: Int
    /// Whether the resource must be unmodified since then (a leading `-`) rather than modified.
    let unmodified: Bool

    /// The condition `argument` states, or `nil` when it is neither a date this reads nor a file's name (curl then warns
    /// and goes on without one).
    init?(_ argument: String) {
        unmodified = argument.hasPrefix("-")
        let text = unmodified ? String(argument.dropFirst()) : argument
        if let seconds = Self.date(text) {
            self.seconds = seconds
            return
        }
        var info = stat()
        guard !text.isEmpty, stat(text, &info) == 0 else { return nil }
        seconds = Int(info.st_mtim.tv_sec)
    }

    /// The header field that states it.
    var field: HTTPField {
        let date = IMFFixdate.string(fromUnixTime: seconds) ?? "Thu, 01 Jan 1970 00:00:00 GMT"
        return HTTPField(name: unmodified ? .ifUnmodifiedSince : .ifModifiedSince, value: date)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970 of the dates this reads (UTC): HTTP's three forms, `YYYYMMDD` or `YYYY-MM-DD`, and `D Mon YYYY`
    /// (a weekday before it, a comma, and `GMT` or `UTC` after are let be), each with an optional `HH:MM:SS`.
    static func date(_ text: String) -> Int? {
        if let date = HTTPDate.parse(text) { return Int(date.timeIntervalSince1970) }
        var words = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }).map { $0.lowercased() }
        if let last = words.last, last == "gmt" || last == "utc" { words.removeLast() }
        if let first = words.first, first.count >= 3, first.allSatisfy(\.isLetter), !months.contains(String(first.prefix(3))) { words.removeFirst() }
        var time = (hour: 0, minute: 0, second: 0)
        if let last = words.last, last.contains(":") {
            let parts = last.split(separator: ":").map { Int($0) }
            guard parts.count == 3, let hour = parts[0], let minute = parts[1], let second = parts[2],
                  (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else { return nil }
            time = (hour, minute, second)
            words.removeLast()
        }
        let day: Int, month: Int, year: Int
        switch words.count {
        case 1:
            // YYYYMMDD or YYYY-MM-DD.
            let digits = words[0].filter(\.isNumber)
            guard digits.count == 8, words[0].allSatisfy({ $0.isNumber || $0 == "-" }), let number = Int(digits) else { return nil }
            (year, month, day) = (number / 10_000, number / 100 % 100, number % 100)
        case 3:
            // D Mon YYYY.
            guard let index = months.firstIndex(of: String(words[1].prefix(3))), let d = Int(words[0]), let y = Int(words[2]) else { return nil }
            (day, month, year) = (d, index + 1, y)
        default:
            return nil
        }
        guard (1...12).contains(month), (1...31).contains(day), (1970...9999).contains(year) else { return nil }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (Int32(year - 1900), Int32(month - 1), Int32(day))
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(time.hour), Int32(time.minute), Int32(time.second))
        let seconds = timegm(&parts)
        // timegm carries a day past the month's end into the next: such a date is no date.
        guard parts.tm_mday == Int32(day) else { return nil }
        return Int(seconds)
    }
}
