import Cookies
import FoundationEssentials
import Loader

/// What `-b`, `-c` and `-j` ask for, as curl reads them: a `-b` with a `=` is cookies typed on the line, sent
/// with every HTTP request; any other `-b` names a file (Netscape format) read into the jar, and turns the jar on
/// (`-b ''` with no file too), as `-c` does, which names the file the jar is written to when the transfers end
/// (`-` for standard output). `-j` leaves the files' session cookies out.
struct CookieEngine: Sendable {
    /// The jar, when a `-b` file or `-c` turned it on.
    let jar: CookieJar?
    /// The typed cookies, joined with `; `.
    let typed: String?
    /// Where the jar is written when the transfers end.
    let savePath: String?

    /// Reads the `-b` files into a new jar, or into `sharedJar` (the jar of a command line's operations, see
    /// `--next`) when there is one. A file that cannot be read is skipped, as curl skips it: the transfers go on
    /// with the cookies there are.
    init(cookieArguments: [String], jarPath: String?, junkSessionCookies: Bool, sharedJar: CookieJar? = nil) {
        let typedPieces = cookieArguments.filter { $0.contains("=") }
        let files = cookieArguments.filter { !$0.contains("=") }
        typed = typedPieces.isEmpty ? nil : typedPieces.joined(separator: "; ")
        savePath = jarPath
        guard !files.isEmpty || jarPath != nil else {
            jar = nil
            return
        }
        let jar = sharedJar ?? CookieJar()
        for path in files where !path.isEmpty {
            guard let contents = try? InputFile.contents(of: path) else { continue }
            for cookie in NetscapeCookieFile.cookies(in: String(decoding: contents, as: UTF8.self))
            where !(junkSessionCookies && cookie.expires == nil) {
                jar.insert(cookie)
            }
        }
        self.jar = jar
    }

    /// The session's cookie store, or `nil` when no cookie option was given.
    var store: (any CookieStore)? {
        guard jar != nil || typed != nil else { return nil }
        return Store(jar: jar, typed: typed)
    }

    /// Writes the jar to ``savePath``: whole or not at all (a new file renamed over the old), so that a
    /// failure leaves the file as it was. Throws a ``LoadError`` that names the file and the cause.
    func save() throws(LoadError) {
        guard let savePath, let jar else { return }
        try StateFile.write(NetscapeCookieFile.text(for: jar.cookies), to: savePath, what: "the cookie jar")
    }

    /// The jar's cookies followed by the typed ones, which go to every `http`, `https`, `ws` and `wss` URL as
    /// curl sends them.
    private struct Store: CookieStore {
        let jar: CookieJar?
        let typed: String?

        func cookieField(for url: URL) -> String? {
            let stored = jar?.cookieField(for: url)
            guard let typed, let scheme = url.scheme?.lowercased(), ["http", "https", "ws", "wss"].contains(scheme) else { return stored }
            return stored.map { $0 + "; " + typed } ?? typed
        }

        func save(setCookie values: [String], from url: URL) {
            jar?.save(setCookie: values, from: url)
        }
    }
}
