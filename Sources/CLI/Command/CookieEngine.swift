import Cookies
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader
import SystemPackage

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
        let text = NetscapeCookieFile.text(for: jar.cookies)
        if savePath == "-" {
            StandardStreams.output(text)
            return
        }
        let file = URL(fileURLWithPath: savePath)
        var status = stat()
        if stat(savePath, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            // Not a regular file (`/dev/null`, a pipe): written in place, as curl does; a rename would replace it.
            do {
                let descriptor = try FileDescriptor.open(FilePath(savePath), .writeOnly)
                try descriptor.closeAfter { _ = try descriptor.writeAll(text.utf8) }
            } catch {
                throw LoadError(.cannotWriteToFile, url: file, reason: "cannot save the cookie jar to \(savePath): \(error)", underlying: error)
            }
            return
        }
        // A new file of an unguessable name, made here and nowhere else (exclusive, no link followed), then
        // renamed over the old: a link planted beside the jar cannot redirect the write.
        let temporary = FilePath(savePath + ".loadurl-" + UUID().uuidString)
        var created = false
        do {
            // Owner-only, as the jar holds session tokens.
            let descriptor = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .exclusiveCreate, .noFollow],
                                                     permissions: .ownerReadWrite)
            created = true
            try descriptor.closeAfter { _ = try descriptor.writeAll(text.utf8) }
            guard rename(temporary.string, savePath) == 0 else { throw Errno(rawValue: errno) }
        } catch {
            if created { _ = unlink(temporary.string) }
            throw LoadError(.cannotWriteToFile, url: file, reason: "cannot save the cookie jar to \(savePath): \(error)", underlying: error)
        }
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
