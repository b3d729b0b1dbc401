import FoundationEssentials
import Loader

/// One `--data-urlencode` argument, read as curl reads it: `content`, `=content` (for content holding `=` or
/// starting with `@`), `name=content`, `@FILE` or `name@FILE` (`-` for standard input). The content is
/// form-encoded as curl 7.88 sends it: a space as `+`, every other byte but letters, digits and `-._~` as `%XX`; the
/// name goes as written.
struct URLEncodedPiece {
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

    /// The piece as sent: `name=` and the encoded content (a space as `+`, every other byte but RFC 3986's unreserved as
    /// `%XX`), its file read (``InputFile``).
    func encoded() throws(InputFile.Unreadable) -> String {
        let bytes = try file.map { path throws(InputFile.Unreadable) in try InputFile.contents(of: path) } ?? Data((content ?? "").utf8)
        let text = PercentEncoding.encode(bytes: bytes) { PercentEncoding.isUnreserved($0) || $0 == 0x20 }
            .replacing(" ", with: "+")
        return name.map { "\($0)=\(text)" } ?? text
    }
}
