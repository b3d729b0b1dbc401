/// Percent-encoding of URL text (`%XX`, upper-case hex), for the places that build URL parts from raw text.
package enum PercentEncoding {
    /// `text`'s UTF-8 bytes, each one `keeps` refuses written as `%XX`.
    package static func encode(_ text: String, keeping keeps: (UInt8) -> Bool) -> String {
        encode(bytes: text.utf8, keeping: keeps)
    }

    /// `bytes`, each one `keeps` refuses written as `%XX` (the others are ASCII, as `keeps` chooses them).
    package static func encode(bytes: some Sequence<UInt8>, keeping keeps: (UInt8) -> Bool) -> String {
        var out = ""
        for byte in bytes {
            if keeps(byte) {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
