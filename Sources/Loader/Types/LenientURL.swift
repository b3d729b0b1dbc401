import FoundationEssentials

extension URL {
    /// The URL `text` names, read as curl and browsers read what people type and servers send: bytes that a URL may
    /// not hold (spaces, controls, bytes past ASCII, `"<>\^`{|}`, a `%` that starts no `%XX`, a second `#`, an `@` of
    /// the login) are percent-encoded first, and the rest, escapes included, stays as written. `nil` if it still is
    /// not a URL.
    ///
    /// `URL(string:)` alone encodes such a string as if none of it were encoded yet: `?a=x|y&b=%41` became
    /// `?a=x%7Cy&b=%2541`, another resource, and a signed URL broken. The host and port are left to `URL` (an IPv6
    /// literal's brackets, a name past ASCII).
    package init?(leniently text: String, relativeTo base: URL? = nil) {
        let encoded = Self.encodingInvalidBytes(of: text)
        guard let url = URL(string: encoded, relativeTo: base) ?? URL(string: text, relativeTo: base) else { return nil }
        self = url
    }

    /// `text` with the bytes of its login and of what follows its authority that no URL may hold percent-encoded,
    /// its escapes kept.
    static func encodingInvalidBytes(of text: String) -> String {
        let bytes = Array(text.utf8)
        let (login, rest) = parts(of: bytes)
        // Most URLs need nothing: they go through without a copy.
        func needsWork(_ range: Range<Int>) -> Bool {
            bytes[range].contains { !isAllowed($0) || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "@") }
        }
        guard needsWork(login) || needsWork(rest) else { return text }
        var out = String(decoding: bytes[..<login.lowerBound], as: UTF8.self)
        append(bytes, login, to: &out, fragmentAllowed: false)
        out += String(decoding: bytes[login.upperBound..<rest.lowerBound], as: UTF8.self)
        append(bytes, rest, to: &out, fragmentAllowed: true)
        return out
    }

    /// `bytes[range]` onto `out`: escapes and bytes a URL may hold as they are, the others as `%XX`; a first `#` as
    /// itself when `fragmentAllowed`, any other `#` and every `@` encoded (past the authority an `@` may stay: it does).
    private static func append(_ bytes: [UInt8], _ range: Range<Int>, to out: inout String, fragmentAllowed: Bool) {
        var sawFragment = !fragmentAllowed
        for index in range {
            let byte = bytes[index]
            let next = bytes[(index + 1)..<min(index + 3, bytes.endIndex)]
            if byte == UInt8(ascii: "#"), !sawFragment {
                sawFragment = true
                out += "#"
            } else if byte == UInt8(ascii: "%"), next.count == 2, next.allSatisfy({ PercentDecoding.hexValue($0) != nil }) {
                out += "%"
            } else if byte != UInt8(ascii: "#"), byte != UInt8(ascii: "%"), isAllowed(byte), fragmentAllowed || byte != UInt8(ascii: "@") {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                out += PercentEncoding.encode(bytes: CollectionOfOne(byte)) { _ in false }
            }
        }
    }

    /// Where the login (before the authority's last `@`; empty when there is none) and what follows the authority (the
    /// path, query and fragment) lie in `bytes`.
    private static func parts(of bytes: [UInt8]) -> (login: Range<Int>, rest: Range<Int>) {
        var index = 0
        // A scheme and its colon, if any.
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), isSchemeName(bytes[..<colon]) {
            index = colon + 1
        }
        guard bytes[index...].starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else { return (index..<index, index..<bytes.endIndex) }
        let start = index + 2
        var end = start
        while end < bytes.endIndex, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[end]) { end += 1 }
        let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")) ?? start
        return (start..<at, end..<bytes.endIndex)
    }

    /// Whether `bytes` spell a scheme (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`).
    package static func isSchemeName(_ bytes: some Collection<UInt8>) -> Bool {
        func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
        guard let first = bytes.first, isLetter(first) else { return false }
        return bytes.dropFirst().allSatisfy { isLetter($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// Whether a URL may hold `byte` as it is in its login or past its authority (RFC 3986's unreserved, reserved and
    /// `%`); `[` and `]` are not among them there.
    private static func isAllowed(_ byte: UInt8) -> Bool {
        guard byte > 0x20, byte < 0x7F else { return false }
        return !"\"<>\\^`{|}[]".utf8.contains(byte)
    }
}
