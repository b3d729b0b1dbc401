import FoundationEssentials
import Loader

/// One `--data-urlencode` argument, read as curl reads it: `content`, `=content` (for content holding `=` or
/// starting with `@`), `name=content`, `@FILE` or `name@FILE` (`-` for standard input). The content is
/// percent-encoded, every byte but letters, digits and `-._~`; the name goes as written.
struct URLEncodedPiece: Equatable {
    /// The name before `=` or `@`, if any.
    let name: String?
    /// The content to encode, when given inline.
    let content: String?
    /// The file whose contents are encoded, when given with `@`.
    let file: String?

    /// Reads `argument` as curl does: a `=` anywhere splits name and content; without one, a `@` splits name and file.
    init(_ argument: String) {
        let separator = argument.firstIndex(of: "=") ?? argument.firstIndex(of: "@")
        guard let separator else {
            (name, content, file) = (nil, argument, nil)
            return
        }
        let before = String(argument[..<separator])
        let after = String(argument[argument.index(after: separator)...])
        if argument[separator] == "=" {
            (name, content, file) = (before.isEmpty ? nil : before, after, nil)
        } else {
            (name, content, file) = (before.isEmpty ? nil : before, nil, after)
        }
    }

    /// What stands in the pieces for one whose file cannot be read (no encoded piece can hold a `%` alone).
    static let unreadable = "%"

    /// The piece as sent: `name=` and the encoded content; `nil` when its file cannot be read.
    func encoded(input: Data?) -> String? {
        let bytes: Data
        if let file {
            guard let read = file == "-" ? input : FileManager.default.contents(atPath: file) else { return nil }
            bytes = read
        } else {
            bytes = Data((content ?? "").utf8)
        }
        let text = PercentEncoding.encode(bytes: bytes) { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
        }
        return name.map { "\($0)=\(text)" } ?? text
    }
}
