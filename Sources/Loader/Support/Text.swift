import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Small text helpers the package's modules share. FoundationEssentials (which the modules import instead of
// Foundation, so that a process using the loader does not map Foundation and ICU) has none of them.

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs: HTTP's optional whitespace around values.
    package func trimmingSpaces() -> SubSequence {
        // Over the UTF-8 bytes, not the characters: breaking a field value into grapheme clusters to find two
        // ASCII bytes took 2% of a small response's samples in `perf` (its `Content-Length`, on every response).
        // One pass forward: a protocol's UTF-8 view is not bidirectional.
        let bytes = utf8
        var first: Index?
        var end = startIndex
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let here = index
            bytes.formIndex(after: &index)
            guard bytes[here] != UInt8(ascii: " "), bytes[here] != UInt8(ascii: "\t") else { continue }
            if first == nil { first = here }
            end = index
        }
        guard let first else { return self[endIndex...] }
        return self[first..<end]
    }

    /// The text without the leading and trailing characters that match `predicate`.
    package func trimming(while predicate: (Character) -> Bool) -> SubSequence {
        guard let first = firstIndex(where: { !predicate($0) }), let last = lastIndex(where: { !predicate($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }

    /// Where `needle` (ASCII) first occurs, ignoring ASCII case.
    package func firstRange(ofIgnoringCase needle: String) -> Range<Index>? {
        let target = needle.lowercased()
        var start = startIndex
        while start < endIndex {
            var end = start
            var matched = true
            for expected in target {
                guard end < endIndex, self[end].lowercased() == String(expected) else { matched = false; break }
                end = index(after: end)
            }
            if matched { return start..<end }
            start = index(after: start)
        }
        return nil
    }

    /// The last component of a slash-separated path (`"a/b.txt"` → `"b.txt"`), ignoring trailing slashes.
    package var lastPathComponent: SubSequence {
        var end = endIndex
        while end > startIndex, self[index(before: end)] == "/" { end = index(before: end) }
        let start = self[..<end].lastIndex(of: "/").map { index(after: $0) } ?? startIndex
        return self[start..<end]
    }
}

extension BinaryInteger {
    /// The number in decimal, with leading zeros up to `width` characters (`7.zeroPadded(2)` → `"07"`), as `%0*d`.
    package func zeroPadded(_ width: Int) -> String {
        let digits = String(self.magnitude)
        let sign = self < 0 ? "-" : ""
        return sign + String(repeating: "0", count: max(0, width - sign.count - digits.count)) + digits
    }
}

extension Double {
    /// The number with exactly `places` decimals, as C's `%.6f` prints it: `1.5.fixed(3)` → `"1.500"`.
    package func fixed(_ places: Int) -> String {
        printed("%.\(max(0, places))f")
    }

    /// The number as C's printf prints it with `format`, a conversion for one double (`"%.3g"`). The C
    /// library does it: FoundationEssentials has no `String(format:)`.
    package func printed(_ format: String) -> String {
        let length = withVaList([self]) { vsnprintf(nil, 0, format, $0) }
        guard length >= 0 else { return String(self) }
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        _ = withVaList([self]) { vsnprintf(&buffer, buffer.count, format, $0) }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension URL {
    /// The URL's text with the password of its user information, if any, as `***` (`ftp://ann:***@host/`): for
    /// messages, which end up in logs and terminals.
    package var absoluteStringHidingPassword: String {
        guard password != nil, var parts = URLComponents(url: self, resolvingAgainstBaseURL: true) else { return absoluteString }
        parts.percentEncodedPassword = "***"
        return parts.string ?? absoluteString
    }
}
