import ArchiveScheme
import ArgumentParser
import Cookies
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import FTPScheme
import HTTPScheme
import HTTPTypes
import Loader
import StandardSchemes

/// The `loadurl` command: loads each URL in turn, of any registered scheme, and writes its body out.
///
/// Options are spelled as curl spells them. Run it in-process with ``execute()`` (tests do, after
/// registering schemes of their own); the executable calls `LoadURL.main()`.
public struct LoadURL: AsyncParsableCommand, Sendable {
    /// The command's name, help text and exit codes.
    public static let configuration = CommandConfiguration(
        commandName: "loadurl",
        abstract: "Load URLs of any registered scheme (data:, file:, …) and write their bodies out.",
        discussion: """
        Each URL's body goes to standard output in order, or to the file given by the -o or -O that pairs \
        with it (the first -o/-O with the first URL, and so on). A failed URL does not stop the others; the \
        exit status is that of the last failure. With -Z the transfers run at once, and standard output still \
        gets the bodies and -w lines in the order of the URLs.

        Exit status (curl's numbers):
          0  success                          35  TLS failure
          1  unsupported scheme               37  file missing or unreadable
          2  usage                            47  too many redirects
          3  malformed URL                    56  connection lost, bad response,
          6  host not found                        client certificate refused
          7  cannot connect                   58  client certificate unusable
         22  HTTP error with -f               60  untrusted or mismatched certificate
         23  cannot write output              61  cannot decode body
         25  server refused the upload        63  body too large
         26  cannot read upload               67  login denied
         28  timed out                        78  remote resource not found
         33  -C: the rest cannot be had       99  other
         36  -C: the offset is past the end  130  cancelled
        """
    )

    /// The URLs to load, in order.
    @Argument(help: "URLs to load, e.g. data:,Hello file:///etc/hostname (without a scheme, http:// is assumed).")
    public var urls: [String] = []

    /// Output files, paired with the URLs in order; `-` is standard output.
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the next URL's body to FILE ('-' for stdout).")
    public var outputs: [String] = []

    /// How many URLs (in order, after those given -o) are saved under their remote names, when ArgumentParser
    /// read the line whole; ``parseQuickly(_:)`` puts each `-O` in its place in ``outputs`` instead.
    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Save the next URL's body under its remote file name.")
    public var remoteNames: Int

    /// Save every URL under its remote name.
    @Flag(name: .customLong("remote-name-all"), help: "Save every URL's body under its remote file name.")
    public var remoteNameAll = false

    /// The folder for -o and -O files.
    @Option(name: .customLong("output-dir"), help: "Put -o and -O files in DIR.")
    public var outputDirectory: String?

    /// Create missing folders for output files.
    @Flag(name: .customLong("create-dirs"), help: "Create the folders an output file needs.")
    public var createDirectories = false

    /// Print each response's head before its body.
    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the response head (status and header fields) before the body.")
    public var include = false

    /// No progress meter and no error messages.
    @Flag(name: [.customShort("s"), .customLong("silent")], help: "Silent: no progress meter, no error messages.")
    public var silent = false

    /// With -s, still print error messages.
    @Flag(name: [.customShort("S"), .customLong("show-error")], help: "With -s, still print error messages.")
    public var showError = false

    /// Treat an HTTP status of 400 or more as a failure (exit 22) and print no body.
    @Flag(name: [.customShort("f"), .customLong("fail")], help: "Fail (exit 22) on an HTTP status of 400 or more, printing no body.")
    public var failOnHTTPError = false

    /// A summary printed after each transfer.
    @Option(name: [.customShort("w"), .customLong("write-out")], help: "Print FORMAT (or @FILE's contents) after each transfer: %{url} %{http_code} %{http_version} %{content_type} %{size_download} %{time_total} %{exitcode} %{errormsg}.")
    public var writeOut: String?

    /// The longest a single transfer may take.
    @Option(name: [.customShort("m"), .customLong("max-time")], help: "Fail a transfer that takes longer than SECONDS.")
    public var maxTime: Double?

    /// The method, curl's `-X`.
    @Option(name: [.customShort("X"), .customLong("request")], help: "Use METHOD instead of GET (or POST with -d, PUT with -T).")
    public var method: String?

    /// Extra header fields, `Name: value`.
    @Option(name: [.customShort("H"), .customLong("header")], help: "Send the header field 'Name: value' (repeatable).")
    public var headers: [String] = []

    /// Pieces of a body to POST, as text (`@file` reads a file, `@-` standard input, without their line breaks),
    /// sent as a form unless -H sets a Content-Type. Pieces of -d and --data-binary are joined with `&`, as curl does.
    @Option(name: [.customShort("d"), .customLong("data")], help: "POST DATA (or @FILE, line breaks removed) as application/x-www-form-urlencoded (repeatable, joined with &).")
    public var data: [String] = []

    /// Pieces of a body to POST, byte for byte (`@file` reads a file, `@-` standard input).
    @Option(name: .customLong("data-binary"), help: "POST DATA (or @FILE) byte for byte (repeatable, joined with &).")
    public var dataBinary: [String] = []

    /// Parts of a `multipart/form-data` POST, as curl's -F: `name=value`, `name=@FILE` (the file uploaded),
    /// `name=<FILE` (its contents as the value); see ``FormPart``.
    @Option(name: [.customShort("F"), .customLong("form")], help: "POST a multipart form part: name=VALUE, name=@FILE (uploaded, ;type= ;filename=), name=<FILE (contents as value) (repeatable).")
    public var form: [String] = []

    /// Parts of a `multipart/form-data` POST whose value is sent as written: no `@`, `<` or `;` read.
    @Option(name: .customLong("form-string"), help: "POST a multipart form part name=VALUE, the value as written (repeatable).")
    public var formString: [String] = []

    /// A file to upload with PUT (`-` for standard input); to a URL ending in `/`, under the file's own name.
    @Option(name: [.customShort("T"), .customLong("upload-file")], help: "PUT the contents of FILE ('-' for stdin), streamed; to a URL ending in / under FILE's name.")
    public var uploadFile: String?

    /// Follow redirects (curl does not without it).
    @Flag(name: [.customShort("L"), .customLong("location")], help: "Follow redirects.")
    public var followRedirects = false

    /// The most redirects to follow with -L; -1 for no limit.
    @Option(name: .customLong("max-redirs"), help: "Follow at most NUM redirects with -L (default 50, -1 for no limit).")
    public var maxRedirects: Int = 50

    /// Credentials for Basic authentication (or an FTP login); without a `:`, the password is empty.
    @Option(name: [.customShort("u"), .customLong("user")], help: "Send USER:PASSWORD with Basic authentication (with --digest or --anyauth, in answer to the server's challenge), answer a ws or wss handshake's Basic or Digest challenge with them, or log in to FTP with them.")
    public var user: String?

    /// Extra trusted root certificates.
    @Option(name: .customLong("cacert"), help: "Trust the CA certificates in the PEM FILE too.")
    public var caCertificates: String?

    /// The client certificate to show a server that asks for one, optionally with the key's passphrase after a `:`.
    @Option(name: [.customShort("E"), .customLong("cert")],
            help: "Show the client certificate in the PEM FILE (with its key unless --key; FILE:PASSPHRASE for an encrypted key) to a server that asks for one.")
    public var clientCertificate: String?

    /// The client certificate's private key, when it is not in the certificate's file.
    @Option(name: .customLong("key"), help: "The client certificate's private key, in the PEM FILE.")
    public var clientKey: String?

    /// The passphrase of an encrypted client key.
    @Option(name: .customLong("pass"), help: "The PASSPHRASE of the client certificate's encrypted key.")
    public var clientKeyPassphrase: String?

    /// Skip certificate verification.
    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not verify the server's certificate (dangerous).")
    public var insecure = false

    /// `--ssl-reqd`: FTP over TLS (`AUTH TLS`) or fail.
    @Flag(name: .customLong("ssl-reqd"), help: "Require TLS for ftp:// URLs (AUTH TLS, explicit FTPS), or fail.")
    public var requireTLS = false

    /// `--ssl`: FTP over TLS when the server offers it.
    @Flag(name: .customLong("ssl"), help: "Use TLS for ftp:// URLs (AUTH TLS) when the server offers it.")
    public var tryTLS = false

    /// How `-u` answers an HTTP server: `--basic` (the default), `--digest` or `--anyauth`; the last given wins.
    @Flag(exclusivity: .chooseLast)
    public var authMethod: AuthMethodChoice = .basic

    /// Which HTTP versions https offers: `--http2` (the default) or `--http1.1`; the last given wins, as in curl.
    @Flag(exclusivity: .chooseLast)
    public var httpVersion: HTTPVersionChoice = .http2

    /// HEAD: print the response head only.
    @Flag(name: [.customShort("I"), .customLong("head")], help: "Send HEAD and print the response head only.")
    public var headOnly = false

    /// Name-resolution overrides, `HOST:PORT:ADDRESS`.
    @Option(name: .customLong("resolve"), help: "Connect to ADDRESS for HOST:PORT (HOST:PORT:ADDRESS, repeatable).")
    public var resolve: [String] = []

    /// Where a download goes on from: `-` for the end of its output file, or a byte offset.
    @Option(name: [.customShort("C"), .customLong("continue-at")], help: "Go on with a download from byte OFFSET, or with '-' from the end of its output file, appending the rest; a partial file is left as it was if the server cannot send the rest (exit 33).")
    public var continueAt: String?

    /// Ask for a compressed response and decode it.
    @Flag(name: .customLong("compressed"), help: "Ask for a gzip, deflate or brotli (br) response and write it decoded.")
    public var compressed = false

    /// Cookies to send (`NAME=VALUE; …`), or files of cookies to start the jar with.
    @Option(name: [.customShort("b"), .customLong("cookie")], help: "Send 'NAME=VALUE; …' as cookies, or read FILE's cookies (Netscape format, as curl writes) into the cookie jar (repeatable).")
    public var cookies: [String] = []

    /// Where the jar's cookies are written when the transfers end.
    @Option(name: [.customShort("c"), .customLong("cookie-jar")], help: "Keep cookies between the URLs and write them all to FILE at the end ('-' for stdout), in Netscape format.")
    public var cookieJar: String?

    /// Leave session cookies out of the -b files.
    @Flag(name: [.customShort("j"), .customLong("junk-session-cookies")], help: "Leave the session cookies of -b files out, as a new browser session would.")
    public var junkSessionCookies = false

    /// The HTTP proxy for every http and https URL; `""` for none, whatever the environment says.
    @Option(name: [.customShort("x"), .customLong("proxy")], help: "Send http, https, ws and wss requests through the proxy [http://][USER:PASSWORD@]HOST[:PORT] or socks5h://[USER:PASSWORD@]HOST[:PORT] (port 1080 if none); '' for none. Without it, http_proxy, https_proxy and all_proxy are read, as curl reads them.")
    public var proxy: String?

    /// Hosts reached directly even with a proxy.
    @Option(name: .customLong("noproxy"), help: "Reach these hosts directly (comma-separated; each covers the hosts beneath it; '*' for all), in place of no_proxy.")
    public var noProxy: String?

    /// The proxy's credentials.
    @Option(name: [.customShort("U"), .customLong("proxy-user")], help: "Log in to the proxy as USER:PASSWORD (Basic to an HTTP proxy, RFC 1929 to a SOCKS5 one).")
    public var proxyUser: String?

    /// Never draw the progress meter.
    @Flag(name: .customLong("no-progress-meter"), help: "Never draw the progress meter.")
    public var noProgressMeter = false

    /// How many times a transfer is tried again after a transient failure.
    @Option(name: .customLong("retry"),
            help: "Try a transfer up to NUM more times after a transient failure: a timeout, an HTTP 408, 429, 500, 502, 503 or 504, an FTP 4xx reply.")
    public var retries = 0

    /// The wait before each retry.
    @Option(name: .customLong("retry-delay"),
            help: "Wait SECONDS before each retry (0: 1 s, doubling up to 10 minutes); a server's Retry-After goes first.")
    public var retryDelay: Double = 0

    /// How long after a transfer's first start a retry may begin.
    @Option(name: .customLong("retry-max-time"), help: "Begin no retry later than SECONDS after the transfer's first start (0: no limit).")
    public var retryMaxTime: Double = 0

    /// Whether a refused connection is retried.
    @Flag(name: .customLong("retry-connrefused"), help: "With --retry, retry after a refused connection too.")
    public var retryConnectionRefused = false

    /// Whether every failure is retried.
    @Flag(name: .customLong("retry-all-errors"), help: "With --retry, retry after any failure of the load.")
    public var retryAllErrors = false

    /// Runs the transfers at once, up to ``parallelMax``.
    @Flag(name: [.customShort("Z"), .customLong("parallel")],
          help: "Run the transfers at once (at most --parallel-max); what goes to standard output still comes out in the order of the URLs.")
    public var parallel = false

    /// With ``parallel``, how many transfers run at once.
    @Option(name: .customLong("parallel-max"), help: "With -Z, run at most NUM transfers at once (1 to 300).")
    public var parallelMax = 50

    /// Makes the command with no arguments; ArgumentParser fills it in.
    public init() {}

    /// Runs the command and exits with its status.
    public func run() async throws {
        let status = await execute()
        if status != 0 { throw ExitCode(status) }
    }

    /// Loads every URL and returns the exit status, without exiting. Registers the built-in schemes and the
    /// `archive:` plugin into the process-wide registry if they are not there yet.
    ///
    /// `@concurrent`: the loop runs on Swift's global executor, not on the main actor that calls it, so that
    /// each load does not hop to the main thread and back (measured: 5.8 → 3.4 context switches per URL,
    /// 5,000 URLs in 0.58–0.66 s instead of 0.71–1.02 s).
    @concurrent public func execute() async -> Int32 {
        StandardSchemes.register()
        if !SchemeRegistry.default.handlers.contains(where: { $0 == ArchiveSchemeHandler.self }) {
            SchemeRegistry.default.register(ArchiveSchemeHandler.self)
        }
        signal(SIGPIPE, SIG_IGN)
        guard !urls.isEmpty else {
            report("no URL given (try --help)", status: LoadURLExit.usage)
            return LoadURLExit.usage
        }
        var configuration: LoaderSession.Configuration
        do {
            configuration = try makeConfiguration()
        } catch {
            report(String(describing: error), status: LoadURLExit.usage)
            return LoadURLExit.usage
        }
        let cookieEngine = CookieEngine(cookieArguments: cookies, jarPath: cookieJar, junkSessionCookies: junkSessionCookies)
        configuration.cookieStore = cookieEngine.store
        if insecure, !silent {
            StandardStreams.error("loadurl: warning: -k: server certificates are not verified\n")
        }
        let session = LoaderSession(configuration: configuration, delegate: challengeAnswers)
        defer { session.finishTasksAndInvalidate() }

        // The transfers start on an HTTP event loop: an HTTP response then wakes this loop where it is, not
        // a thread of the global executor (5,000 small GETs: 0.67–0.79 s → 0.53–0.68 s, a quarter less
        // CPU). A large body is written out from the global executor (see `transfer`), so that the socket
        // is read on one core while the output is written on the other. Handlers that block (file:, FTP)
        // run off the loop anyway (see `SchemeHandler.startLoading()`).
        let requestOptions = self.requestOptions
        let status = await withTaskExecutorPreference(HTTPSchemeHandler.taskExecutor()) {
            guard parallel, urls.count > 1 else {
                var lastFailure: Int32 = 0
                for (index, text) in urls.enumerated() {
                    let status = await transfer(text, index: index, session: session, options: requestOptions, ordered: nil)
                    if status != 0 { lastFailure = status }
                }
                return lastFailure
            }
            return await transferAll(session: session, options: requestOptions)
        }
        // The jar is written whatever the transfers did, as curl writes it; a jar that cannot be written is a
        // failure of its own (curl only warns, and the cookies would be lost unseen).
        do {
            try cookieEngine.save()
        } catch {
            report(error.description, status: LoadURLExit.cannotWriteOutput)
            return status == 0 ? LoadURLExit.cannotWriteOutput : status
        }
        return status
    }

    /// The `--retry` options.
    var retryPolicy: RetryPolicy {
        RetryPolicy(retries: retries, fixedDelay: retryDelay, maximumTime: retryMaxTime, connectionRefused: retryConnectionRefused,
                    allErrors: retryAllErrors)
    }

    /// Seconds from `start` until now.
    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = start.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
    }

    /// The most transfers `--parallel-max` lets run at once, as curl's.
    static let parallelLimit = 300

    /// Runs every transfer, up to `--parallel-max` at once, starting them in the order of the URLs; returns the exit
    /// status of the last failure in that order. What goes to standard output comes out in that order too
    /// (``OrderedOutput``).
    private func transferAll(session: LoaderSession, options: RequestOptions) async -> Int32 {
        let ordered = OrderedOutput()
        let width = min(parallelMax, Self.parallelLimit)
        let urls = self.urls
        return await withTaskGroup(of: (Int, Int32).self) { group in
            var statuses = [Int32](repeating: 0, count: urls.count)
            var started = 0
            while started < urls.count {
                // A new one as each ends: the earliest unfinished transfer always runs, so none waits on a turn for ever.
                if started >= width, let (index, status) = await group.next() { statuses[index] = status }
                let index = started
                group.addTask { (index, await transfer(urls[index], index: index, session: session, options: options, ordered: ordered)) }
                started += 1
            }
            for await (index, status) in group { statuses[index] = status }
            return statuses.last(where: { $0 != 0 }) ?? 0
        }
    }

    /// Bodies up to this size are written out on the event loop that read them; larger ones (or ones of
    /// unknown size) from the global executor.
    static let smallBody: Int64 = 256 * 1024

    /// Loads one URL to its output; returns its exit status. With `ordered` (`-Z`), standard output is written in
    /// the transfer's turn.
    private func transfer(_ text: String, index: Int, session: LoaderSession, options: RequestOptions, ordered: OrderedOutput?) async -> Int32 {
        // A clock that never steps back (the wall clock may), for %{time_total} and %{speed_download}: of the last try,
        // as curl's.
        var started = ContinuousClock.now
        guard let url = URLArgument.url(text, registry: session.registry) else {
            let error = LoadError(.badURL, reason: "'\(text.prefix(200))' is not a URL")
            report(error.description, status: 3)
            summarize(TransferSummary(url: URL(string: "about:blank")!, exitCode: 3, error: error), format: options.writeOut,
                      index: index, ordered: ordered)
            return 3
        }
        var summary = TransferSummary(url: url)
        defer {
            summary.seconds = Self.seconds(since: started)
            summarize(summary, format: options.writeOut, index: index, ordered: ordered)
        }
        let destination = outputPath(for: url, index: index)
        if let scheme = url.scheme?.lowercased(), scheme == "ws" || scheme == "wss" {
            // Messages are written as they come: the socket waits for its turn to open.
            if destination == nil { await ordered?.turn(index) }
            return await webSocketTransfer(url, to: destination, session: session, options: options, summary: &summary)
        }
        // The label only for a meter that shows: `lastPathComponent` parses the URL's path again, which was
        // about 2% of a run of many small transfers. Transfers at once draw none (their lines would cross).
        let showsMeter = ordered == nil && showsProgress(toStdout: destination == nil)
        var meter = ProgressMeter(enabled: showsMeter, label: showsMeter ? url.lastPathComponent : "")
        defer { meter.finish() }
        // A body for standard output whose turn (-Z) has not come is kept aside, not held back (``SpooledOutput``).
        var spool: SpooledOutput?
        defer { spool?.close() }
        // --retry: each try after a transient failure starts afresh (a file output is written again from its start,
        // or with -C - from where it stopped), as long as nothing went to standard output.
        let retry = retryPolicy
        let firstStarted = started
        var retried = 0
        var wroteToStandardOutput = false
        // Where the first try began writing a file output (-C N's offset, else 0): each retry writes from there again.
        var firstOffset: Int64?
        // The wait before the next try, if another is allowed; `nil` once tries, time, or a body read from standard
        // input (which cannot be sent again) run out.
        func nextTry(retryAfter: String?) -> Double? {
            guard retry.retries > 0, !wroteToStandardOutput, options.uploadFile != "-" else { return nil }
            let wait = retry.delay(beforeRetry: retried + 1, retryAfter: retryAfter)
            guard retry.allows(retry: retried + 1, elapsed: Self.seconds(since: firstStarted), wait: wait) else { return nil }
            return wait
        }
        // Tells of the coming retry and waits for it.
        func retrying(after problem: String, wait: Double) async {
            if !silent {
                let left = retry.retries - retried - 1
                StandardStreams.error("loadurl: warning: \(problem); retrying in \(wait.printed("%g")) s, \(left) \(left == 1 ? "retry" : "retries") left\n")
            }
            spool?.close()
            spool = nil
            summary = TransferSummary(url: url)
            // A file is written again from where the first try began (-C - goes on from its end instead), whether or
            // not the next try writes a byte.
            if let destination, options.continueAt?.origin != .outputFile, let firstOffset {
                _ = truncate(destination, off_t(firstOffset))
            }
            try? await Task.sleep(for: .seconds(wait))
            meter = ProgressMeter(enabled: showsMeter, label: showsMeter ? url.lastPathComponent : "")
            started = ContinuousClock.now
            retried += 1
        }
        // Cancels `bytes`' load and retries after `problem`, if another try is allowed: `false` when it is not.
        func tryAgain(cancelling bytes: LoadBytes, after problem: String, retryAfter: String?) async -> Bool {
            guard let wait = nextTry(retryAfter: retryAfter) else { return false }
            bytes.task.cancel()
            await retrying(after: problem, wait: wait)
            return true
        }
        attempts: while true {
            do {
                let request = try makeRequest(url, options: options)
                let (offset, writtenAt) = try options.continueAt?.start(writingTo: destination, url: url) ?? (0, nil)
                if firstOffset == nil { firstOffset = offset }
                guard let (bytes, response) = try await startLoad(request, from: offset, writtenAt: writtenAt, options: options,
                                                                       session: session, summary: &summary,
                                                                       passesTransient: nextTry(retryAfter: nil) != nil) else {
                    // Whole already: nothing to write, the file stays as it is.
                    return 0
                }
                summary.response = response
                if let status = response.status?.code, RetryPolicy.isTransient(status: status) || (failOnHTTPError && retry.allErrors && status >= 400),
                   await tryAgain(cancelling: bytes, after: "HTTP \(status) from \(url.absoluteStringHidingPassword)", retryAfter: response.headerFields[.retryAfter]) {
                    continue attempts
                }
                if failOnHTTPError, let status = response.status, status.code >= 400 {
                    bytes.task.cancel()
                    summary.exitCode = LoadURLExit.httpError
                    report("The requested URL returned error: \(status.code) (\(url.absoluteStringHidingPassword))", status: LoadURLExit.httpError)
                    return LoadURLExit.httpError
                }
                let output = try OutputFile(path: destination, createDirectories: createDirectories, url: url, appends: offset > 0)
                defer { output.close() }
                if destination == nil, let ordered, !ordered.isTurn(index) {
                    spool = SpooledOutput(url: url, directory: session.configuration.temporaryDirectory.path)
                }
                let sink = spool
                func put(_ data: Data) throws {
                    if let sink { try sink.write(data) } else {
                        if destination == nil { wroteToStandardOutput = true }
                        try output.write(data)
                    }
                }
                if include || headOnly { try put(Data(response.printableHead.utf8)) }
                func copyBody() async throws {
                    for try await chunk in bytes.chunks {
                        try put(chunk)
                        summary.bytes += Int64(chunk.count)
                        meter.update(received: summary.bytes, expected: response.expectedContentLength)
                    }
                }
                if let length = response.expectedContentLength, length <= Self.smallBody {
                    try await copyBody()
                } else {
                    // Measured on a 512 MiB body: 0.43–0.51 s to a file this way, 0.60–1.86 s on the loop.
                    try await withTaskExecutorPreference(globalConcurrentExecutor) { try await copyBody() }
                }
                if let sink, let ordered {
                    await ordered.turn(index)
                    try sink.drain(into: output)
                }
                try output.finish()
                return 0
            } catch {
                let output = error as? OutputFile.Failure
                let resume = error as? ContinueAt.Failure
                let failure = output?.error ?? resume?.error ?? LoadError.wrapping(error, url: url)
                let status = resume?.status ?? (output == nil ? LoadURLExit.status(for: failure) : LoadURLExit.cannotWriteOutput)
                if output == nil, resume == nil, retry.isTransient(failure), let wait = nextTry(retryAfter: nil) {
                    meter.finish()
                    await retrying(after: failure.description, wait: wait)
                    continue attempts
                }
                summary.exitCode = status
                summary.error = failure
                // The meter's line is cleared first, so that the message does not land at the end of it.
                meter.finish()
                report(failure.description, status: status)
                // What came before the failure goes out in its turn, as it would have gone out one transfer after another.
                if let spool, let ordered, output == nil, let stdout = try? OutputFile(path: nil, createDirectories: false, url: url) {
                    await ordered.turn(index)
                    try? spool.drain(into: stdout)
                }
                return status
            }
        }
    }

    /// Starts loading `request`; from a positive `offset` (`-C`), asks for the bytes from there on (over HTTP, if
    /// the resource is unmodified since `writtenAt`, when the partial file was last written) and takes the answer
    /// only if it is that rest. `nil` when the output is whole already. Throws ``ContinueAt/Failure`` when the
    /// rest cannot be had, having touched no file. Records the response in `summary` (for `-w`) either way.
    private func startLoad(_ request: LoadRequest, from offset: Int64, writtenAt: Int?, options: RequestOptions, session: LoaderSession,
                           summary: inout TransferSummary, passesTransient: Bool) async throws -> (LoadBytes, LoadResponse)? {
        guard offset > 0 else { return try await session.bytes(for: request) }
        let isHTTP = request.scheme == "http" || request.scheme == "https"
        var ranged = request
        ranged.headerFields[.range] = "bytes=\(offset)-"
        // A condition of the caller's own (-H 'If-Range: …') stands in its place, and -H 'If-Unmodified-Since:'
        // (curl's way to send no such field) goes without: the partial file's time is the client's clock, and
        // its last write, not when its first bytes came.
        let declined = try Self.headerFields(options.headers, url: request.url).removed.contains(.ifUnmodifiedSince)
        if isHTTP, !declined, let writtenAt, ranged.headerFields[.ifRange] == nil, ranged.headerFields[.ifUnmodifiedSince] == nil {
            ranged.headerFields[.ifUnmodifiedSince] = IMFFixdate.string(fromUnixTime: writtenAt)
        }
        func failure(_ reason: String, _ status: Int32, underlying: (any Error)? = nil) -> ContinueAt.Failure {
            ContinueAt.Failure(error: LoadError(.resourceUnavailable, url: request.url, reason: "cannot go on from byte \(offset): \(reason)",
                                                underlying: underlying), status: status)
        }
        let started: (LoadBytes, LoadResponse)
        do {
            started = try await session.bytes(for: ranged)
        } catch let error as LoadError where error.code == .resourceUnavailable && !isHTTP {
            // A handler without statuses (file:, ftp:) fails a range past the end with the code it gives other
            // refusals (an FTP server's 550): the resource's size tells which this was.
            switch ContinueAt.verdict(size: await size(of: request, session: session), offset: offset) {
            case .complete: return nil
            case .refuse(let reason, let status) where status == ContinueAt.pastTheEnd: throw failure(reason, status, underlying: error)
            default: throw error
            }
        }
        let (bytes, response) = started
        summary.response = response
        // With -f an error status is -f's to report (22), as without -C; one worth another try (--retry) is the caller's.
        if failOnHTTPError, let status = response.status?.code, status >= 400, status != 412, status != 416 { return started }
        if passesTransient, let status = response.status?.code, RetryPolicy.isTransient(status: status) { return started }
        var verdict = ContinueAt.verdict(on: response, offset: offset)
        if verdict == .askSize {
            bytes.task.cancel()
            verdict = ContinueAt.verdict(size: await size(of: request, session: session), offset: offset)
        }
        switch verdict {
        case .append:
            return started
        case .complete:
            bytes.task.cancel()
            return nil
        case .askSize:
            bytes.task.cancel()
            throw failure("the handler sent other than the bytes from \(offset) on", ContinueAt.rangeError)
        case .refuse(let reason, let status):
            bytes.task.cancel()
            throw failure(reason, status)
        }
    }

    /// The size of what `request` loads, from a `HEAD` of it; `nil` if that fails or does not tell.
    private func size(of request: LoadRequest, session: LoaderSession) async -> Int64? {
        var head = request
        head.method = .head
        head.headerFields[.range] = nil
        guard let (bytes, response) = try? await session.bytes(for: head) else { return nil }
        bytes.task.cancel()
        return response.expectedContentLength
    }

    /// The session settings the options ask for.
    func makeConfiguration() throws -> LoaderSession.Configuration {
        var configuration = LoaderSession.Configuration.default
        if retries < 0 || retryDelay < 0 || retryMaxTime < 0 { throw ValidationError("--retry, --retry-delay and --retry-max-time want numbers of 0 or more") }
        // As curl: more than its limit is its limit; fewer than one is no number of transfers.
        if parallelMax < 1 { throw ValidationError("--parallel-max wants a number of transfers from 1 to \(Self.parallelLimit), not \(parallelMax)") }
        // Streamed as it is sent: transfers at once would each read a part of it.
        if parallel, uploadFile == "-", urls.count > 1 { throw ValidationError("-Z cannot go with -T - for several URLs: standard input is read once, by one transfer") }
        if let continueAt {
            guard ContinueAt(continueAt) != nil else { throw ValidationError("-C wants a byte offset or '-', not '\(continueAt)'") }
            // A range of an encoded body cannot be decoded alone; an upload is never resumed here.
            if compressed { throw ValidationError("-C cannot go with --compressed: the rest of a compressed body cannot be decoded alone") }
            if uploadFile != nil || !data.isEmpty || !dataBinary.isEmpty || !form.isEmpty || !formString.isEmpty { throw ValidationError("-C resumes downloads only, not -T, -d or -F") }
            // The head would go into the file between its bytes and the rest (-i), or replace them (-I).
            if include || headOnly { throw ValidationError("-C cannot go with -i or -I: the head would be written into the file being completed") }
        }
        if !form.isEmpty || !formString.isEmpty {
            // One body per request, as curl's "you can only select one HTTP request method".
            if uploadFile != nil || !data.isEmpty || !dataBinary.isEmpty || headOnly {
                throw ValidationError("-F cannot go with -d, --data-binary, -T or -I: a request has one body")
            }
            for option in form {
                do throws(FormPart.Malformed) {
                    let part = try FormPart(option)
                    for setting in part.skipped where !silent || showError {
                        StandardStreams.error("loadurl: warning: -F '\(option)': skipped the unknown setting '\(setting)'\n")
                    }
                } catch {
                    throw ValidationError(error.description)
                }
            }
            for option in formString {
                do throws(FormPart.Malformed) { _ = try FormPart(literal: option) } catch { throw ValidationError(error.description) }
            }
        }
        if let maxTime, maxTime > 0 { configuration.timeoutIntervalForResource = maxTime }
        // As curl: no limit on how long a transfer may go without progress (the session's default is 60 s);
        // -m bounds the whole transfer.
        configuration.timeoutIntervalForRequest = .infinity
        configuration.redirectLimit = followRedirects ? (maxRedirects < 0 ? Int.max : maxRedirects) : 0
        // `-L --max-redirs 0` fails at the first redirect (47), as curl's does; without -L a redirect is the result.
        if followRedirects, maxRedirects == 0 { configuration.middleware.append(RedirectMiddleware(limit: 0)) }
        // As with curl, bodies arrive as the server sends them unless --compressed asks for decoding.
        configuration.contentDecoding = compressed ? .automatic : .off
        var http = HTTPClientOptions()
        http.tls.additionalTrustRootsPEMFile = caCertificates
        http.tls.verifiesCertificates = !insecure
        if let clientCertificate {
            (http.tls.clientCertificatePEMFile, http.tls.clientPrivateKeyPassphrase) = Self.split(certificate: clientCertificate, passphrase: clientKeyPassphrase)
            http.tls.clientPrivateKeyPEMFile = clientKey
        } else if clientKey != nil || clientKeyPassphrase != nil {
            throw ValidationError("--key and --pass need --cert (the client certificate they belong to)")
        }
        http.allowsHTTP2 = httpVersion == .http2
        for entry in resolve {
            // HOST:PORT:ADDRESS, where ADDRESS may itself contain colons (IPv6, optionally bracketed).
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, Int(parts[1]) != nil else { throw ValidationError("--resolve wants HOST:PORT:ADDRESS, not \(entry)") }
            http.resolve["\(parts[0].lowercased()):\(parts[1])"] = String(parts[2].trimming(while: { $0 == "[" || $0 == "]" }))
        }
        try setProxies(&http, environment: ProcessInfo.processInfo.environment)
        configuration.handlerOptions[HTTPClientOptions.self] = http
        // As curl: an FTP file's time costs a round trip (MDTM), asked only when the head is printed.
        configuration.handlerOptions[FTPOptions.self].readsModificationDate = include || headOnly
        if requireTLS || tryTLS { configuration.handlerOptions[FTPOptions.self].tls = requireTLS ? .required : .ifAvailable }
        // -k, --cacert and -E hold for FTPS as for HTTPS.
        configuration.handlerOptions[FTPOptions.self].verifiesCertificates = !insecure
        configuration.handlerOptions[FTPOptions.self].trustRootsPEMFile = caCertificates
        configuration.handlerOptions[FTPOptions.self].clientCertificatePEMFile = http.tls.clientCertificatePEMFile
        configuration.handlerOptions[FTPOptions.self].clientPrivateKeyPEMFile = http.tls.clientPrivateKeyPEMFile
        configuration.handlerOptions[FTPOptions.self].clientPrivateKeyPassphrase = http.tls.clientPrivateKeyPassphrase
        return configuration
    }

    /// `-E`'s file and passphrase as curl reads them: `FILE:PASSPHRASE`, split at the first `:` not escaped as `\:`
    /// (unless the whole argument names an existing file); `--pass`, when given, is the passphrase.
    public static func split(certificate: String, passphrase: String?) -> (file: String, passphrase: String?) {
        if FileManager.default.fileExists(atPath: certificate) { return (certificate, passphrase) }
        var file = ""
        var rest = certificate[...]
        while let character = rest.popFirst() {
            if character == "\\", rest.first == ":" {
                file.append(rest.removeFirst())
            } else if character == ":" {
                return (file, passphrase ?? String(rest))
            } else {
                file.append(character)
            }
        }
        return (file, passphrase)
    }

    /// The proxies `-x`, `-U` and `--noproxy` ask for, or, without `-x`, those of `environment`'s variables, as
    /// curl reads them (`http_proxy` for http, `https_proxy` for https, `all_proxy` for both, `no_proxy`).
    func setProxies(_ http: inout HTTPClientOptions, environment: [String: String]) throws {
        if let proxy {
            let chosen = try proxy.isEmpty ? nil : HTTPClientOptions.Proxy(proxy)
                ?? { throw ValidationError("-x wants an HTTP or SOCKS5 proxy, [http://][USER:PASSWORD@]HOST[:PORT] or socks5h://[USER:PASSWORD@]HOST[:PORT], not '\(proxy)'") }()
            http.httpProxy = chosen
            http.httpsProxy = chosen
        } else {
            http.httpProxy = HTTPClientOptions.Proxy.fromEnvironment(environment, scheme: "http")
            http.httpsProxy = HTTPClientOptions.Proxy.fromEnvironment(environment, scheme: "https")
            // A variable this tool cannot use is said, not skipped in silence: the user meant traffic to go through it.
            for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
                if let value = environment[name], !value.isEmpty, HTTPClientOptions.Proxy(value) == nil, !silent || showError {
                    StandardStreams.error("loadurl: warning: \(name) is not an HTTP or SOCKS5 proxy this tool can use ('\(value)'): connecting without it\n")
                }
            }
        }
        if let proxyUser {
            let credential = Self.credential(proxyUser)
            for keyPath in [\HTTPClientOptions.httpProxy, \HTTPClientOptions.httpsProxy] where http[keyPath: keyPath] != nil {
                http[keyPath: keyPath]?.user = credential.user
                http[keyPath: keyPath]?.password = credential.password
            }
        }
        http.noProxy = noProxy.map { $0.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty } }
            ?? HTTPClientOptions.Proxy.exceptions(fromEnvironment: environment)
    }

    /// The options that shape each request, read once: ArgumentParser's property wrappers look up generic
    /// metadata on every read, about 1% of a run of many small transfers when read for each URL.
    struct RequestOptions: Sendable {
        let headers: [String]
        let user: String?
        let data: [String]
        let dataBinary: [String]
        /// The -F parts (checked already by ``makeConfiguration()``).
        let form: [FormPart]
        let uploadFile: String?
        let headOnly: Bool
        let method: String?
        /// Where downloads go on from (`-C`), if anywhere.
        let continueAt: ContinueAt?
        /// Standard input, read once when a -d or --data-binary piece is `@-`: every URL gets the same body.
        let standardInput: Data?
        /// The -w format, read from its file once when given as `@FILE` (`@-`: standard input), as curl does.
        var writeOut: String? = nil
    }

    /// This command's ``RequestOptions``; reads standard input if a body piece asks for it.
    var requestOptions: RequestOptions {
        // -F parts before --form-string ones: ArgumentParser keeps each option's own order only (as with -d).
        let parts = form.compactMap { try? FormPart($0) } + formString.compactMap { try? FormPart(literal: $0) }
        let readsInput = (data + dataBinary).contains("@-") || parts.contains { $0.content == .file(path: "-") || $0.content == .fileContents(path: "-") }
        let input = readsInput ? FileManager.default.contents(atPath: "/dev/stdin") : nil
        var options = RequestOptions(headers: headers, user: user, data: data, dataBinary: dataBinary, form: parts, uploadFile: uploadFile,
                                     headOnly: headOnly, method: method, continueAt: continueAt.flatMap(ContinueAt.init),
                                     standardInput: input)
        if let writeOut, writeOut.hasPrefix("@") {
            let path = String(writeOut.dropFirst())
            let contents = path == "-" ? (input ?? FileManager.default.contents(atPath: "/dev/stdin")) : FileManager.default.contents(atPath: path)
            if contents == nil, !silent || showError {
                StandardStreams.error("loadurl: warning: -w: cannot read \(path); no summary is printed\n")
            }
            options.writeOut = contents.map { String(decoding: $0, as: UTF8.self) } ?? ""
        } else {
            options.writeOut = writeOut
        }
        return options
    }

    /// What answers HTTP challenges under `--digest` or `--anyauth`, with `-u`'s credentials or else the URL's user
    /// info (under `--basic`, `-u`'s go unasked with each request instead), or `nil`.
    var challengeAnswers: UserCredentials? {
        guard authMethod != .basic else { return nil }
        return UserCredentials(user.map(Self.credential), methods: authMethod.answers)
    }

    /// `USER:PASSWORD` as `-u` and `-U` take it: the password after the first colon, empty without one.
    static func credential(_ text: String) -> Credential {
        let pair = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        return Credential(user: pair[0], password: pair.count > 1 ? pair[1] : "")
    }

    /// The request for `url` that `options` describe.
    func makeRequest(_ url: URL, options: RequestOptions) throws -> LoadRequest {
        var request = LoadRequest(url: url)
        let (added, removed) = try Self.headerFields(options.headers, url: url)
        request.headerFields.append(contentsOf: added)
        if let user = options.user, authMethod == .basic || !(request.scheme == "http" || request.scheme == "https") {
            if request.scheme == "http" || request.scheme == "https" {
                request.headerFields[.authorization] = Self.credential(user).basicAuthorization
            } else if url.user == nil, var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) {
                // Other schemes (FTP) log in with the URL's user info, as curl's -u does for them.
                let credential = Self.credential(user)
                parts.user = credential.user
                parts.password = credential.password
                if let withUser = parts.url { request.url = withUser }
            }
        }
        if !options.data.isEmpty || !options.dataBinary.isEmpty {
            request.method = .post
            request.body = try Self.body(form: options.data, binary: options.dataBinary, input: options.standardInput, url: url)
            if !options.data.isEmpty, request.headerFields[.contentType] == nil {
                request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            }
        }
        if !options.form.isEmpty {
            request.method = .post
            // A type of the caller's own (-H) is kept, with the boundary added as curl does, or with its own
            // boundary, which the body then uses.
            let own = request.headerFields[.contentType].flatMap { $0.isEmpty ? nil : $0 }
            let ownBoundary = own.flatMap { MIMEType($0)?.parameter("boundary") }.flatMap { $0.isEmpty ? nil : $0 }
            let form = try MultipartForm(options.form, input: options.standardInput, url: url,
                                         boundary: ownBoundary ?? MultipartForm.newBoundary())
            request.body = form.requestBody(url: url)
            if let own {
                request.headerFields[.contentType] = ownBoundary != nil ? own : own + "; boundary=" + form.boundary
            } else {
                request.headerFields[.contentType] = form.contentType
            }
        }
        if let uploadFile = options.uploadFile {
            request.method = .put
            let file = URL(fileURLWithPath: uploadFile == "-" ? "/dev/stdin" : uploadFile)
            // Checked before connecting, as curl does: a server told to store a file empties the one it has.
            var isFolder = false
            guard uploadFile == "-" || (FileManager.default.fileExists(atPath: file.path, isDirectory: &isFolder) && !isFolder
                                        && FileManager.default.isReadableFile(atPath: file.path)) else {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "cannot read \(uploadFile)")
            }
            request.body = .file(file)
            // To a URL that names a folder, under the file's own name, as curl does.
            let path = request.url.path(percentEncoded: true)
            if uploadFile != "-", path.isEmpty || path.hasSuffix("/"),
               var parts = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
                parts.percentEncodedPath = (path.isEmpty ? "/" : path) + Self.percentEncodedSegment(file.lastPathComponent)
                if let named = parts.url { request.url = named }
            }
        }
        if options.headOnly { request.method = .head }
        if let method = options.method { request.method = HTTPRequest.Method(method.uppercased()) ?? request.method }
        for name in removed { request.headerFields[name] = nil }
        return request
    }

    /// What the `-H` options say: the fields to add, in order, and the names to send without.
    ///
    /// `Name: value` adds a field (a name given twice is sent twice); `Name;` one with an empty value. `Name:`
    /// with nothing after it sends no such field, as curl: not an earlier -H's, not one an option would add
    /// (`Content-Type:` with -d); Host and User-Agent, which the HTTP handler adds, stay.
    static func headerFields(_ headers: [String], url: URL) throws -> (added: [HTTPField], removed: [HTTPField.Name]) {
        var added: [HTTPField] = []
        var removed: [HTTPField.Name] = []
        for header in headers {
            let emptyValue = header.last == ";" && !header.contains(":")
            let end = emptyValue ? header.index(before: header.endIndex) : header.firstIndex(of: ":")
            guard let end, let name = HTTPField.Name(String(header[..<end].trimmingSpaces())) else {
                throw LoadError(.badURL, url: url, reason: "-H wants 'Name: value' or 'Name;', not '\(header)'")
            }
            let value = emptyValue ? "" : String(header[header.index(after: end)...].trimmingSpaces())
            if !emptyValue, value.isEmpty {
                removed.append(name)
            } else {
                added.append(HTTPField(name: name, value: value))
            }
        }
        return (added, removed)
    }

    /// `name` as one path segment: every byte but letters, digits and `-._~!$&'()*+,=:@` percent-encoded.
    static func percentEncodedSegment(_ name: String) -> String {
        let kept = Set("-._~!$&'()*+,=:@".utf8)
        return PercentEncoding.encode(name) { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || kept.contains(byte)
        }
    }

    /// The body of -d and --data-binary pieces: a lone `--data-binary @file` is streamed from the file; anything
    /// else is read into memory and joined with `&`, with line breaks taken out of -d's files, as curl does.
    private static func body(form: [String], binary: [String], input: Data?, url: URL) throws -> RequestBody {
        if form.isEmpty, binary.count == 1, let only = binary.first, only.hasPrefix("@"), only != "@-" {
            let path = String(only.dropFirst())
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "cannot read \(path)")
            }
            return .file(URL(fileURLWithPath: path))
        }
        func piece(_ text: String, stripsLineBreaks: Bool) throws -> Data {
            guard text.hasPrefix("@") else { return Data(text.utf8) }
            guard let read = text == "@-" ? input : FileManager.default.contents(atPath: String(text.dropFirst())) else {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "cannot read \(text.dropFirst())")
            }
            return stripsLineBreaks ? read.filter { $0 != 0x0A && $0 != 0x0D } : read
        }
        // curl joins the pieces in the order given; ArgumentParser keeps each option's own order only, so -d
        // pieces come before --data-binary ones.
        let pieces = try form.map { try piece($0, stripsLineBreaks: true) } + binary.map { try piece($0, stripsLineBreaks: false) }
        return .bytes(Data(pieces.joined(separator: Data("&".utf8))))
    }

    /// The file for the URL at `index`, or `nil` for standard output.
    private func outputPath(for url: URL, index: Int) -> String? {
        var name: String?
        if index < outputs.count {
            switch outputs[index] {
            case "-": name = nil
            case Self.remoteNameSlot: name = Self.remoteName(of: url)
            default: name = outputs[index]
            }
        } else if remoteNameAll || index - outputs.count < remoteNames {
            name = Self.remoteName(of: url)
        }
        guard let name else { return nil }
        if let outputDirectory, !outputDirectory.isEmpty, !name.hasPrefix("/") {
            return outputDirectory.hasSuffix("/") ? outputDirectory + name : outputDirectory + "/" + name
        }
        return name
    }

    /// The name `-O` saves `url` under: the last segment of its path as written, not percent-decoded (as curl's),
    /// so that an encoded slash or a dot-dot cannot lead the file out of the folder; `index` when there is none.
    static func remoteName(of url: URL) -> String {
        let last = url.path(percentEncoded: true).split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        return last.isEmpty || last == "." || last == ".." ? "index" : String(last)
    }

    private func showsProgress(toStdout: Bool) -> Bool {
        !silent && !noProgressMeter && isatty(STDERR_FILENO) == 1 && !(toStdout && isatty(STDOUT_FILENO) == 1)
    }

    func report(_ message: String, status: Int32) {
        guard !silent || showError else { return }
        StandardStreams.error("loadurl: (\(status)) \(message)\n")
    }

    /// Writes `-w`'s line for a transfer; with `ordered`, in the transfer's turn, which it ends.
    private func summarize(_ summary: TransferSummary, format: String?, index: Int, ordered: OrderedOutput?) {
        let line = format.flatMap { $0.isEmpty ? nil : summary.format($0) }
        guard let ordered else {
            if let line { StandardStreams.output(line) }
            return
        }
        ordered.finish(index, with: line ?? "")
    }
}
