/// A `.netrc` file, read as curl reads one for `-n`/`--netrc-file`: `machine HOST login USER password PASSWORD`
/// entries (and `default` for any host), whitespace apart and in any layout, a word in double quotes when it holds
/// spaces (`\"`, `\\`, `\n`, `\r`, `\t` escaped inside), `account` skipped, a `macdef` skipped to its blank line,
/// a `#` starting a comment.
struct Netrc: Sendable {
    /// One entry: the host it is for (`nil` for `default`) and what it gives.
    struct Entry: Sendable, Equatable {
        /// The host, or `nil` for `default`.
        var machine: String?
        /// The user name.
        var login: String?
        /// The password.
        var password: String?
    }

    /// The entries, in order.
    let entries: [Entry]

    /// The entries of `text`.
    init(_ text: String) {
        var words = Self.words(text)[...]
        var entries: [Entry] = []
        while let word = words.popFirst() {
            switch word {
            case "machine":
                entries.append(Entry(machine: words.popFirst() ?? ""))
            case "default":
                entries.append(Entry(machine: nil))
            case "login" where !entries.isEmpty:
                entries[entries.count - 1].login = words.popFirst()
            case "password" where !entries.isEmpty:
                entries[entries.count - 1].password = words.popFirst()
            case "account":
                _ = words.popFirst()
            default:
                continue
            }
        }
        self.entries = entries
    }

    /// The login and password for `host` (and `user`, when the URL names one): the first entry for the host, or the
    /// `default` entry if it comes first, whose login is `user` when given.
    func credential(host: String, user: String?) -> (login: String, password: String)? {
        for entry in entries where entry.machine.map({ $0.lowercased() == host.lowercased() }) ?? true {
            guard let login = entry.login ?? user, user == nil || login == user else { continue }
            return (login, entry.password ?? "")
        }
        return nil
    }

    /// The file's words: whitespace apart, quoted ones unescaped, comments and `macdef` bodies left out.
    private static func words(_ text: String) -> [String] {
        var words: [String] = []
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })[...]
        while let line = lines.popFirst() {
            var rest = line[...]
            while true {
                rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\r" }
                guard let first = rest.first, first != "#" else { break }
                var word = ""
                if first == "\"" {
                    rest = rest.dropFirst()
                    while let character = rest.popFirst(), character != "\"" {
                        guard character == "\\", let escaped = rest.popFirst() else {
                            word.append(character)
                            continue
                        }
                        word.append(["n": "\n", "r": "\r", "t": "\t"][escaped] ?? escaped)
                    }
                } else {
                    let end = rest.firstIndex { $0 == " " || $0 == "\t" || $0 == "\r" } ?? rest.endIndex
                    word = String(rest[..<end])
                    rest = rest[end...]
                }
                words.append(word)
            }
            // A macro's body runs to the first empty line: none of its words are the file's.
            if words.count >= 2, words[words.count - 2] == "macdef" {
                words.removeLast(2)
                while let body = lines.popFirst(), !body.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) {}
            }
        }
        return words
    }
}
