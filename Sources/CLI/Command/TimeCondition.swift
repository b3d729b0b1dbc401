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
        // A leading `-` asks for one not modified since; a `+`, as nothing, one modified since.
        unmodified = argument.hasPrefix("-")
        let text = unmodified || argument.hasPrefix("+") ? String(argument.dropFirst()) : argument
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

    /// Why `response`'s `Last-Modified` shows the condition unmet, as curl says it; `nil` when it is met or the response
    /// has no such date (a body then is taken, as curl's).
    func unmet(by response: LoadResponse) -> String? {
        guard let text = response.headerFields[.lastModified], let modified = HTTPDate.parse(text).map({ Int($0.timeIntervalSince1970) }) else {
            return nil
        }
        if unmodified {
            // As curl's test: a document modified at -z -DATE's very time is not old enough.
            return modified >= seconds ? "The requested document is not old enough" : nil
        }
        return modified <= seconds ? "The requested document is not new enough" : nil
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let ignoredWords: Set<String> = ["gmt", "utc", "z", "mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Seconds since 1970 of the dates this reads, as curl's date parser reads them, in any order: HTTP's three forms, a
    /// day, a month's name (or its first three letters) and a year (two digits: 1970–2069), or `YYYYMMDD` or
    /// `YYYY-MM-DD`; an optional `HH:MM[:SS]`, an optional zone (`GMT`, `UTC`, `+HHMM`, `-HHMM`); a weekday is let be.
    /// UTC unless a zone says otherwise.
    static func date(_ text: String) -> Int? {
        if let date = HTTPDate.parse(text) { return Int(date.timeIntervalSince1970) }
        var (day, month, year): (Int?, Int?, Int?) = (nil, nil, nil)
        var (hour, minute, second, offset) = (0, 0, 0, 0)
        var timeSeen = false
        for word in text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }).map({ $0.lowercased() }) {
            if word.contains(":") {
                let parts = word.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
                guard !timeSeen, (2...3).contains(parts.count), let h = parts[0], let m = parts[1], (0...23).contains(h), (0...59).contains(m),
                      parts.count == 2 || (parts[2].map { (0...60).contains($0) } ?? false) else { return nil }
                (hour, minute, second, timeSeen) = (h, m, parts.count == 3 ? parts[2]! : 0, true)
            } else if (word.first == "+" || word.first == "-"), word.count == 5, let zone = Int(word.dropFirst()) {
                offset = (word.first == "-" ? -1 : 1) * (zone / 100 * 3600 + zone % 100 * 60)
            } else if word.allSatisfy(\.isLetter) {
                if let index = months.firstIndex(of: String(word.prefix(3))), month == nil, word.count >= 3 {
                    month = index + 1
                } else if !ignoredWords.contains(String(word.prefix(3))) && !ignoredWords.contains(word) {
                    return nil
                }
            } else if word.count == 10, word.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }),
                      let y = Int(word.prefix(4)), let m = Int(word.dropFirst(5).prefix(2)), let d = Int(word.suffix(2)) {
                // YYYY-MM-DD
                (year, month, day) = (y, m, d)
            } else if word.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(word) {
                switch word.count {
                case 8 where year == nil: (year, month, day) = (number / 10_000, number / 100 % 100, number % 100)
                case 4 where year == nil: year = number
                case 1...2 where day == nil: day = number
                case 1...2 where year == nil: year = number < 70 ? 2000 + number : 1900 + number
                default: return nil
                }
            } else {
                return nil
            }
        }
        guard let day, let month, let year, (1...12).contains(month), (1...31).contains(day), (1583...9999).contains(year) else { return nil }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (Int32(year - 1900), Int32(month - 1), Int32(day))
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(hour), Int32(minute), Int32(second))
        let seconds = timegm(&parts)
        // timegm carries a day past the month's end into the next: such a date is no date.
        guard parts.tm_mday == Int32(day) else { return nil }
        return Int(seconds) - offset
    }
}
