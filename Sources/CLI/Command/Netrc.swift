import FoundationEssentials

/// A `.netrc` file, read as curl reads one for `-n`/`--netrc-file`: `machine HOST login USER password PASSWORD`
/// entries (and `default` for any host), keywords in any case, whitespace apart and in any layout, a word in double
/// quotes when it holds spaces (``QuotedWord``), `account` skipped, a `macdef NAME`
/// skipped with its lines up to the first empty one, a `#` starting a comment.
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

    /// A file curl would not read either: which line, and why.
    struct Malformed: Error, CustomStringConvertible {
        /// The line, from 1.
        let line: Int
        /// What is wrong.
        let problem: String

        /// The line and the problem, as error messages name them.
        var description: String { "line \(line): \(problem)" }
    }

    /// The entries, in order.
    let entries: [Entry]

    /// The entries of `text`.
    init(_ text: String) throws(Malformed) {
        var entries: [Entry] = []
        // The keyword whose value the next word is.
        var keyword: String?
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated()[...]
        while let (offset, line) = lines.popFirst() {
            var rest = line[...]
            var macro = false
            while true {
                rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\r" }
                guard let first = rest.first, keyword != nil || first != "#" else { break }
                let word: String
                if first == "\"" {
                    guard let quoted = QuotedWord.read(from: &rest) else {
                        throw Malformed(line: offset + 1, problem: "a quoted word has no closing quote")
                    }
                    word = quoted
                } else {
                    let end = rest.firstIndex { $0 == " " || $0 == "\t" || $0 == "\r" } ?? rest.endIndex
                    word = String(rest[..<end])
                    rest = rest[end...]
                }
                switch (keyword, word.lowercased()) {
                case ("machine"?, _): entries.append(Entry(machine: word))
                case ("login"?, _) where !entries.isEmpty: entries[entries.count - 1].login = word
                case ("password"?, _) where !entries.isEmpty: entries[entries.count - 1].password = word
                case ("macdef"?, _): macro = true
                case (_?, _): break  // account's value, or a value before any machine
                case (nil, "default"): entries.append(Entry(machine: nil))
                case (nil, let name) where ["machine", "login", "password", "account", "macdef"].contains(name):
                    keyword = name
                    continue
                case (nil, _): break
                }
                keyword = nil
            }
            // A macro's body runs to the first empty line: none of its words are the file's.
            if macro {
                while let (_, body) = lines.popFirst(), !(body.isEmpty || body == "\r") {}
            }
        }
        self.entries = entries
    }

    /// The login and password the file gives `url` (http, https, ws, wss, ftp and ftps only), as curl's `-n` takes them:
    /// over the URL's own password when `overridesURL` (`-n`, `--netrc-file`), else only for a URL without one
    /// (`--netrc-optional`).
    func credential(for url: URL, overridesURL: Bool) -> (login: String, password: String)? {
        guard let scheme = url.scheme?.lowercased(), ["http", "https", "ws", "wss", "ftp", "ftps"].contains(scheme),
              overridesURL || url.password == nil, let host = url.host(percentEncoded: false), !host.isEmpty else { return nil }
        return credential(host: host, user: url.user(percentEncoded: false))
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
}
