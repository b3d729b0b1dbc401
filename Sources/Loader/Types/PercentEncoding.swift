/// Percent-encoding of URL text (`%XX`, upper-case hex), for the places that build URL parts from raw text.
package enum PercentEncoding {
    /// `text`'s UTF-8 bytes, each one `keeps` refuses written as `%XX`.
    package static func encode(_ text: String, keeping keeps: (UInt8) -> Bool) -> String {
        encode(bytes: text.utf8, keeping: keeps)
    }

    /// `bytes`, each one `keeps` refuses written as `%XX` (the others are ASCII, as `keeps` chooses them). With
    /// `keepingEscapes`, a `%` that starts a `%XX` stays as it is: text encoded already goes through unchanged.
    package static func encode(bytes: some Collection<UInt8>, keepingEscapes: Bool = false, keeping keeps: (UInt8) -> Bool) -> String {
        var out = ""
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if keeps(byte) || (keepingEscapes && byte == UInt8(ascii: "%") && startsEscape(bytes[bytes.index(after: index)...])) {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
            index = bytes.index(after: index)
        }
        return out
    }

    /// Whether `byte` is RFC 3986's unreserved: a letter, a digit, `-`, `.`, `_` or `~` (never encoded).
    package static func isUnreserved(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// Whether `rest` starts with two hex digits (the rest of a `%XX`).
    private static func startsEscape(_ rest: some Collection<UInt8>) -> Bool {
        let digits = rest.prefix(2)
        return digits.count == 2 && digits.allSatisfy { PercentDecoding.hexValue($0) != nil }
    }
}
