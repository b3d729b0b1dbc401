import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader

/// `--hsts FILE`, as curl reads and writes it: the HSTS policies the transfers start with, read from FILE when it
/// exists, and written back to it, with what the transfers learnt, when they end. `--hsts ''` keeps them in memory
/// alone. curl's format: one policy per line, `HOST "YYYYMMDD HH:MM:SS"` (when it ends, in UTC, or `"unlimited"`), the
/// host dot-prefixed when the policy covers its subdomains; lines starting with `#` are comments.
struct HSTSCacheFile: Sendable {
    /// Where the policies are written; `nil` for none.
    let savePath: String?
    let store: HSTSStore

    /// The policies of the file at `path` (none when it does not exist or cannot be read, as curl starts empty then).
    init(path: String) {
        savePath = path.isEmpty ? nil : path
        // A file named `-` is a file, as for curl: not standard input.
        let text = path.isEmpty ? nil : FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
        store = HSTSStore(entries: text.map(Self.entries(in:)) ?? [])
    }

    /// Writes the policies in force to the file, whole or not at all.
    func save() throws(LoadError) {
        guard let savePath else { return }
        try StateFile.write(Self.text(for: store.entries), to: savePath, what: "the HSTS cache", dashIsStandardOutput: false)
    }

    /// The policies `text` holds; lines that are no policy are skipped.
    static func entries(in text: String) -> [HSTSStore.Entry] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            guard !trimmed.hasPrefix("#"), let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }
            var host = trimmed[..<space]
            let stamp = trimmed[space...].drop { $0 == " " || $0 == "\t" }
            guard stamp.count >= 2, stamp.hasPrefix("\""), let close = stamp.dropFirst().firstIndex(of: "\"") else { return nil }
            let written = stamp[stamp.index(after: stamp.startIndex)..<close]
            let subdomains = host.hasPrefix(".")
            if subdomains { host = host.dropFirst() }
            guard !host.isEmpty else { return nil }
            if written == "unlimited" { return HSTSStore.Entry(host: String(host), includesSubdomains: subdomains, expires: nil) }
            guard let expires = date(String(written)) else { return nil }
            return HSTSStore.Entry(host: String(host), includesSubdomains: subdomains, expires: expires)
        }
    }

    /// The file's text for `entries`.
    static func text(for entries: [HSTSStore.Entry]) -> String {
        var text = "# HSTS cache (curl's format): HOST \"YYYYMMDD HH:MM:SS\", the time in UTC when the policy ends.\n"
        text += "# A host with a leading dot covers its subdomains too. Written by loadurl.\n"
        for entry in entries {
            let stamp = entry.expires.map(stamp(of:)) ?? "unlimited"
            text += (entry.includesSubdomains ? "." : "") + entry.host + " \"" + stamp + "\"\n"
        }
        return text
    }

    /// `YYYYMMDD HH:MM:SS` in UTC; `unlimited` past what `gmtime` shows.
    private static func stamp(of date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "unlimited" }
        return "\((Int(parts.tm_year) + 1900).zeroPadded(4))\((parts.tm_mon + 1).zeroPadded(2))\(parts.tm_mday.zeroPadded(2)) "
            + "\(parts.tm_hour.zeroPadded(2)):\(parts.tm_min.zeroPadded(2)):\(parts.tm_sec.zeroPadded(2))"
    }

    /// The date `YYYYMMDD HH:MM:SS` (UTC) names; `nil` for any other text.
    private static func date(_ text: String) -> Date? {
        let digits = Array(text.utf8)
        guard digits.count == 17, digits[8] == UInt8(ascii: " "), digits[11] == UInt8(ascii: ":"), digits[14] == UInt8(ascii: ":") else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            let part = digits[range]
            guard part.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
            return part.reduce(0) { $0 * 10 + Int32($1 - UInt8(ascii: "0")) }
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8), let hour = number(9..<11),
              let minute = number(12..<14), let second = number(15..<17),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (year - 1900, month - 1, day)
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (hour, minute, second)
        let seconds = timegm(&parts)
        // timegm carries a day past the month's end into the next: such a date is no date.
        guard parts.tm_mday == day else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
