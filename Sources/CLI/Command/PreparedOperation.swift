import Loader

/// One operation of a command line (its options and URLs up to a `--next`) made ready to run: its URLs expanded,
/// its session open with its cookie engine. ``finish(status:)`` ends it once its transfers have.
///
/// A class: each of the operation's transfers (20,000 with `-Z`) holds it, and a copy of the struct (the whole command
/// line's options, each string and array retained) showed in profiles of `loadurl -Z`.
final class PreparedOperation: Sendable {
    /// The operation, its globs expanded.
    let command: LoadURL
    let session: LoaderSession
    let options: LoadURL.RequestOptions
    let cookieEngine: CookieEngine
    /// `--hsts`'s file, if given.
    let hstsFile: HSTSCacheFile?

    init(command: LoadURL, session: LoaderSession, options: LoadURL.RequestOptions, cookieEngine: CookieEngine, hstsFile: HSTSCacheFile?) {
        (self.command, self.session, self.options, self.cookieEngine, self.hstsFile) = (command, session, options, cookieEngine, hstsFile)
    }

    /// Ends the session and writes the cookie jar (`-c`) and the HSTS cache (`--hsts`), whatever the transfers did,
    /// as curl writes them; returns the operation's exit status: `status` (its transfers' last failure), or 23 for a
    /// file that cannot be written after transfers that all worked (curl only warns, and what they learnt would be
    /// lost unseen).
    func finish(status: Int32) -> Int32 {
        session.finishTasksAndInvalidate()
        // Each written whatever became of the other.
        var saved = true
        do {
            try cookieEngine.save()
        } catch {
            command.report(error.description, status: LoadURLExit.cannotWriteOutput)
            saved = false
        }
        do {
            try hstsFile?.save()
        } catch {
            command.report(error.description, status: LoadURLExit.cannotWriteOutput)
            saved = false
        }
        return saved || status != 0 ? status : LoadURLExit.cannotWriteOutput
    }
}

/// Why an operation could not be made ready (``LoadURL/prepared(cookieJar:)``), already reported: its exit status.
struct PreparationFailure: Error {
    let status: Int32
}
