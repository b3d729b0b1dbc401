import FoundationEssentials
import HTTPTypes

/// The fields `-H` adds and removes, read once for all the URLs of a run: `Name: value` adds one (a name given
/// twice is sent twice), `Name;` adds one with an empty value, `Name:` sends none of that name (not an earlier
/// `-H`'s, nor one an option or the HTTP handler would add, as `-d`'s `Content-Type` or the `User-Agent`; the `Host`
/// stays), and `@FILE` (`@-`: standard input) reads such a line from each line of the file, as curl 7.55 and later
/// do. Unlike curl, which warns of an `@FILE` it cannot read and goes on without it, such a file fails each URL.
struct HeaderLines: Sendable {
    /// The fields to send, in the order given.
    private(set) var added: [HTTPField] = []
    /// The names to send none of.
    private(set) var removed: [HTTPField.Name] = []

    /// Why the `-H` (or `--proxy-header`) options could not be read.
    enum Invalid: Error, CustomStringConvertible {
        /// A line that is no field, and the option that gave it.
        case malformed(String, option: String)
        /// An `@FILE` that could not be read, and the option that named it.
        case unreadable(InputFile.Unreadable, option: String)

        /// The line or the file, and why, as error messages name them.
        var description: String {
            switch self {
            case .malformed(let line, let option): "\(option) wants 'Name: value' or 'Name;', not '\(line)'"
            case .unreadable(let cause, let option): "\(option): \(cause)"
            }
        }
    }

    /// The option the lines came with, for errors.
    private let option: String

    /// The fields sent (``added`` without the ``removed`` names), in the order given.
    var fields: [HTTPField] { added.filter { !removed.contains($0.name) } }

    /// The fields of the `-H` arguments (or those of `option`, which reads them alike: curl's `--proxy-header`), their
    /// files read.
    init(_ arguments: [String], option: String = "-H") throws(Invalid) {
        self.option = option
        for argument in arguments {
            guard argument.hasPrefix("@") else {
                try add(argument)
                continue
            }
            let contents: Data
            do {
                contents = try InputFile.contents(of: String(argument.dropFirst()))
            } catch {
                throw .unreadable(error, option: option)
            }
            // One field per line, at CR or LF only (as curl); a blank line (the file's last break, say) is none.
            for line in String(decoding: contents, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
            where !line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                try add(String(line))
            }
        }
    }

    private mutating func add(_ line: String) throws(Invalid) {
        let emptyValue = line.last == ";" && !line.contains(":")
        let end = emptyValue ? line.index(before: line.endIndex) : line.firstIndex(of: ":")
        guard let end, let name = HTTPField.Name(String(line[..<end].trimmingSpaces())) else { throw .malformed(line, option: option) }
        let value = emptyValue ? "" : String(line[line.index(after: end)...].trimmingSpaces())
        if !emptyValue, value.isEmpty {
            removed.append(name)
        } else {
            added.append(HTTPField(name: name, value: value))
        }
    }
}
