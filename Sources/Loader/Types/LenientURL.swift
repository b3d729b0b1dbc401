import FoundationEssentials

extension URL {
    /// The URL `text` names, read as curl and browsers read what people type and servers send: bytes that a URL may
    /// not hold (spaces, controls, bytes past ASCII, `"<>\^`{|}`, a `%` that starts no `%XX`, a second `#`) are
    /// percent-encoded first, and the rest, escapes included, stays as written. `nil` if it still is not a URL.
    ///
    /// `URL(string:)` alone encodes such a string as if none of it were encoded yet: `?a=x|y&b=%41` became
    /// `?a=x%7Cy&b=%2541`, another resource, and a signed URL broken. The authority is left to `URL` (an IPv6
    /// literal's brackets, a name past ASCII).
    package init?(leniently text: String, relativeTo base: URL? = nil) {
        let encoded = Self.encodingInvalidBytes(of: text)
        guard let url = URL(string: encoded, relativeTo: base) ?? URL(string: text, relativeTo: base) else { return nil }
        self = url
    }

    /// `text` with the bytes after its authority that no URL may hold percent-encoded, its escapes kept.
    static func encodingInvalidBytes(of text: String) -> String {
        let bytes = Array(text.utf8)
        let start = authorityEnd(in: bytes)
        let rest = bytes[start...]
        // Most URLs need nothing: they go through without a copy.
        guard rest.contains(where: { !isAllowed($0) || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "#") }) else { return text }
        var out = String(decoding: bytes[..<start], as: UTF8.self)
        var sawFragment = false
        var index = start
        while index < bytes.endIndex {
            let byte = bytes[index]
            let next = bytes[(index + 1)...]
            if byte == UInt8(ascii: "#"), !sawFragment {
                sawFragment = true
                out += "#"
            } else if byte == UInt8(ascii: "%"), next.prefix(2).count == 2, next.prefix(2).allSatisfy({ PercentDecoding.hexValue($0) != nil }) {
                out += "%"
            } else if byte != UInt8(ascii: "#"), byte != UInt8(ascii: "%"), isAllowed(byte) {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                out += PercentEncoding.encode(bytes: CollectionOfOne(byte)) { _ in false }
            }
            index += 1
        }
        return out
    }

    /// Where the authority of `bytes` ends (where the path, query or fragment starts): 0 when it has none.
    private static func authorityEnd(in bytes: [UInt8]) -> Int {
        var index = 0
        // A scheme (a letter, then letters, digits, `+`, `-`, `.`) and its colon, if any.
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, isSchemeStart(bytes[0]),
           bytes[1..<colon].allSatisfy({ isSchemeStart($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }) {
            index = colon + 1
        }
        guard bytes[index...].starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else { return index }
        index += 2
        while index < bytes.endIndex, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[index]) { index += 1 }
        return index
    }

    private static func isSchemeStart(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// Whether a URL may hold `byte` as it is past its authority (RFC 3986's unreserved, reserved and `%`); `[` and `]`
    /// are not among them there.
    private static func isAllowed(_ byte: UInt8) -> Bool {
        guard byte > 0x20, byte < 0x7F else { return false }
        return !"\"<>\\^`{|}[]".utf8.contains(byte)
    }
}
