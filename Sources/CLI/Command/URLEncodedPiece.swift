import FoundationEssentials
import Loader

/// One `--data-urlencode` argument, read as curl reads it: `content`, `=content` (for content holding `=` or
/// starting with `@`), `name=content`, `@FILE` or `name@FILE` (`-` for standard input). The content is
/// percent-encoded, every byte but letters, digits and `-._~`; the name goes as written.
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

    /// A piece whose file could not be read: the argument and why.
    struct Unreadable: Error {
        let argument: String
        let cause: String
    }

    /// The piece as sent: `name=` and the encoded content (every byte but RFC 3986's unreserved as `%XX`), its file
    /// read (`-` is `input`, standard input read once).
    func encoded(argument: String, input: Data?) throws(Unreadable) -> String {
        let bytes: Data
        if let file, file != "-" {
            do {
                bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw Unreadable(argument: argument, cause: String(describing: error))
            }
        } else if file == "-" {
            guard let input else { throw Unreadable(argument: argument, cause: "standard input could not be read") }
            bytes = input
        } else {
            bytes = Data((content ?? "").utf8)
        }
        let text = PercentEncoding.encode(bytes: bytes, keeping: PercentEncoding.isUnreserved)
        return name.map { "\($0)=\(text)" } ?? text
    }
}
