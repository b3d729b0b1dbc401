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
import SystemPackage

// One URL's transfer, from its request to its output: one after another or at once (-Z), with retries (--retry).
extension LoadURL {
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

    /// Runs `transfers` (of one operation or of several, ``PreparedOperation``), up to `width` at once, starting them in
    /// their order; returns each one's exit status, in that order. What goes to standard output comes out in that order
    /// too (``OrderedOutput``). `failingEarly` (`--fail-early`): at the first failure no other starts, those running are
    /// cancelled and nothing more goes to standard output, as curl aborts them; only that failure's status is kept (the
    /// others' read 0), so that it is the run's.
    static func transferAll(_ transfers: [(operation: PreparedOperation, index: Int)], width: Int, failingEarly: Bool = false) async -> [Int32] {
        let ordered = OrderedOutput()
        // --parallel-max 0 is curl's default, 50.
        let width = width == 0 ? 50 : min(width, parallelLimit)
        return await withTaskGroup(of: (Int, Int32).self) { group in
            var statuses = [Int32](repeating: 0, count: transfers.count)
            // Set once --fail-early has stopped the run: the statuses after that are the aborted transfers'.
            var stopped = false
            func note(_ position: Int, _ status: Int32) {
                guard !stopped else { return }
                statuses[position] = status
                if failingEarly, status != 0 {
                    stopped = true
                    ordered.silence()
                    group.cancelAll()
                }
            }
            var started = 0
            while started < transfers.count {
                // A new one as each ends: the earliest unfinished transfer always runs, so none waits on a turn for ever.
                if started >= width, let (position, status) = await group.next() { note(position, status) }
                if stopped { break }
                let position = started
                let (operation, index) = transfers[position]
                group.addTask {
                    let status = await operation.command.transfer(operation.command.urls[index], index: index, session: operation.session,
                                                                  options: operation.options,
                                                                  ordered: OutputTurn(output: ordered, position: position))
                    return (position, status)
                }
                started += 1
            }
            while let (position, status) = await group.next() { note(position, status) }
            return statuses
        }
    }

    /// Bodies up to this size are written out on the event loop that read them; larger ones (or ones of
    /// unknown size) from the global executor.
    static let smallBody: Int64 = 256 * 1024

    /// Loads one URL to its output; returns its exit status. With `ordered` (`-Z`), standard output is written in
    /// the transfer's turn.
    func transfer(_ text: String, index: Int, session: LoaderSession, options: RequestOptions, ordered: OutputTurn?) async -> Int32 {
        // A clock that never steps back (the wall clock may), for %{time_total} and %{speed_download}: of the last try,
        // as curl's.
        var started = ContinuousClock.now
        guard let typed = URLArgument.url(text, registry: session.registry) else {
            let error = LoadError(.badURL, reason: "'\(text.prefix(200))' is not a URL")
            report(error.description, status: LoadURLExit.malformedURL)
            summarize(TransferSummary(url: URL(string: "about:blank")!, exitCode: LoadURLExit.malformedURL, error: error, urlIndex: index),
                      format: options.writeOut, index: index, ordered: ordered)
            return LoadURLExit.malformedURL
        }
        let url = pathAsIs ? typed : DotSegments.removed(from: typed)
        // Judged by the URL as it goes: an http one that --hsts sends as https is https's proxy's.
        let hsts = session.configuration.hstsStore
        let proxyRefusal = options.proxyRefusal.map { refusal in { @Sendable (url: URL) in refusal(hsts?.secureURL(for: url) ?? url) } }
        if let refusal = proxyRefusal?(url) {
            // cannotConnectToHost: 7, curl's for a proxy it cannot use.
            let status = LoadURLExit.status(for: refusal)
            report(refusal.description, status: status)
            summarize(TransferSummary(url: url, exitCode: status, error: refusal, urlIndex: index),
                      format: options.writeOut, index: index, ordered: ordered)
            return status
        }
        var summary = TransferSummary(url: url, urlIndex: index)
        // -v, -i and -I (every hop's head), and -w's variables about connections, hear of each exchange through the task's metrics.
        let events = TransferEvents(verbose: verbose, keepsTransactions: options.writeOutNeedsMetrics || include || headOnly,
                                    headerDump: options.headerDump,
                                    autoReferer: options.autoReferer, netrcAuthorization: netrcAuthorization(options: options),
                                    trustsRedirects: locationTrusted, keepingPOSTAfter: statusesKeepingPOST,
                                    method: options.method.flatMap { HTTPRequest.Method($0) },
                                    refusesRedirect: proxyRefusal)
        defer {
            summary.seconds = Self.seconds(since: started)
            summary.transactions = events?.transactions ?? []
            summary.redirects = events?.redirectCount ?? 0
            summary.bytesSent = events?.bytesSent ?? 0
            summarize(summary, format: options.writeOut, index: index, ordered: ordered)
        }
        var destination = outputPath(for: url, index: index)
        summary.filename = destination
        // -J: the name the server gives (Content-Disposition), once its answer comes, in place of -O's.
        let takesServerName = remoteHeaderName && outputArgument(index) == Self.remoteNameSlot
        var namedByServer = false
        if let scheme = url.scheme?.lowercased(), scheme == "ws" || scheme == "wss" {
            // Messages are written as they come: the socket waits for its turn to open.
            if destination == nil { await ordered?.wait() }
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
        let retry = options.retry
        let firstStarted = started
        var retried = 0
        var wroteToStandardOutput = false
        // Where the first try began writing a file output (-C N's offset, else 0): each retry writes from there again.
        var firstOffset: Int64?
        // This try's output: whether it opened a file (only once a byte came), and which (--no-clobber's NAME.N).
        var tryOutput: OutputFile?
        // The file an earlier try opened under --no-clobber, which the next tries write again (as curl goes on with the
        // file it made), not a NAME.N after it.
        var madeByEarlierTry: String?
        // --remove-on-error: the file the last try wrote from its start, removed if the transfer fails, as curl's does; not
        // a file it never opened, which is the user's as it was, nor one it appended to (-C: unlike curl, which removes
        // what earlier transfers fetched too). Before the summary, which names it.
        var writtenFile: String?
        defer {
            if removeOnError, summary.exitCode != 0, let writtenFile {
                if unlink(writtenFile) != 0, errno != ENOENT, !silent {
                    StandardStreams.error("loadurl: warning: --remove-on-error: cannot remove \(writtenFile): \(Errno(rawValue: errno))\n")
                }
            }
        }
        // Why the output could not be cut back to `firstOffset` for a retry, if it could not: the transfer fails with it.
        var rewindFailure: OutputFile.Failure?
        // The wait before the next try, if another is allowed; `nil` once tries or time run out, or for a -T body
        // that cannot be read again (standard input, a pipe, a FIFO read as it was sent).
        func nextTry(retryAfter: String?) -> Double? {
            guard retry.retries > 0, !wroteToStandardOutput, options.uploadCanBeSentAgain else { return nil }
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
            // The next try writes the same file, the name a server gave under -J included.
            summary = TransferSummary(url: url, urlIndex: index, filename: destination)
            events?.startTry()
            // The file this try opened (its first byte came: one never opened, or a 503 tried again, is left as it was,
            // as curl leaves it; under --no-clobber the NAME.N it made, never the file it kept) is written again from
            // where the first try began (-C - goes on from its end instead), whether or not the next try writes a byte.
            // One that cannot be cut back (standard output as a file, a FIFO) would take the next try's bytes after
            // this one's: the transfer fails instead, as curl's does (23).
            let opened = tryOutput.flatMap { $0.opened ? $0.path : nil }
            tryOutput = nil
            if let opened, options.continueAt?.origin != .outputFile, let firstOffset {
                if noClobber { madeByEarlierTry = opened }
                if let cause = Self.cutBack(opened, to: firstOffset) {
                    rewindFailure = OutputFile.Failure(error: LoadError(.cannotWriteToFile, url: url,
                                                                        reason: "cannot take back what the try wrote to \(opened) for the retry: \(cause)",
                                                                        underlying: cause))
                }
            }
            try? await Task.sleep(for: .seconds(wait))
            meter = ProgressMeter(enabled: showsMeter, label: showsMeter ? url.lastPathComponent : "")
            started = ContinuousClock.now
            retried += 1
        }
        // Throws what kept the -D file from taking a head, if anything did: a local failure (23), as the output's.
        func checkHeaderDump() throws {
            guard let failure = events?.headerDumpFailure else { return }
            throw OutputFile.Failure(error: LoadError(.cannotWriteToFile, url: url, reason: "-D: cannot write the head: \(failure)", underlying: failure))
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
                if let rewindFailure { throw rewindFailure }
                let request = try makeRequest(url, options: options)
                summary.method = request.method.rawValue
                events?.sending(request)
                let (offset, writtenAt) = try options.continueAt?.start(writingTo: destination, url: url) ?? (0, nil)
                if firstOffset == nil { firstOffset = offset }
                guard let (bytes, response) = try await startLoad(request, from: offset, writtenAt: writtenAt, options: options,
                                                                       session: session, events: events, summary: &summary,
                                                                       passesTransient: nextTry(retryAfter: nil) != nil) else {
                    // Whole already: nothing to write, the file stays as it is.
                    return 0
                }
                summary.response = response
                // --etag-save: the response's ETag (an empty file without one), as curl writes it once the head has come.
                if let etagSave, request.scheme == "http" || request.scheme == "https" {
                    let line = response.headerFields[.eTag].map { $0 + "\n" } ?? ""
                    do {
                        try Data(line.utf8).write(to: URL(fileURLWithPath: etagSave))
                    } catch {
                        bytes.task.cancel()
                        throw OutputFile.Failure(error: LoadError(.cannotWriteToFile, url: url, reason: "--etag-save: cannot write \(etagSave): \(error)",
                                                                  underlying: error))
                    }
                }
                // -z's or --etag-compare's condition held the resource back (not modified since, or the same ETag):
                // nothing is written, an output file there stays as it was, as curl's; -i and -I still write the head.
                if options.timeCondition != nil || options.etagToMatch != nil, response.status?.code == 304, !include, !headOnly {
                    bytes.task.cancel()
                    return 0
                }
                // A server that ignored -z's field (or a scheme that has none: ftp, file), whose 2xx's Last-Modified shows the
                // condition unmet: as curl, the body is not taken, and the transfer is a 304 (%{http_code}). Not for a range,
                // nor for an error status (-f and --retry judge it).
                if let condition = options.timeCondition, !include, !headOnly, request.headerFields[.range] == nil, offset == 0,
                   response.isSuccess, let unmet = condition.unmet(by: response) {
                    bytes.task.cancel()
                    if verbose { StandardStreams.error("* \(unmet)\n* Simulate an HTTP 304 response\n") }
                    var simulated = response
                    simulated.status = .notModified
                    summary.response = simulated
                    return 0
                }
                if let status = response.status?.code, retry.retries(status: status, failsOnHTTPError: failsOnHTTPError),
                   await tryAgain(cancelling: bytes, after: "HTTP \(status) from \(url.absoluteStringHidingPassword)", retryAfter: response.headerFields[.retryAfter]) {
                    continue attempts
                }
                // --fail-with-body writes the error's body first, but never into a file being completed (-C).
                var httpError: Int?
                // -f with -i or -I: the head is written, then the transfer fails, as curl writes heads as they come.
                var failsAfterHead: Int?
                if failsOnHTTPError, let status = response.status, status.code >= 400 {
                    if include || headOnly, !failWithBody, offset == 0 {
                        failsAfterHead = status.code
                    } else if !failWithBody || offset != 0 {
                        bytes.task.cancel()
                        // A -D file that could not take the head is told first, as curl fails at the head's write (23).
                        try checkHeaderDump()
                        return failed(withHTTPStatus: status.code, summary: &summary)
                    } else {
                        httpError = status.code
                    }
                }
                // --max-filesize: a size announced over it fails before a byte is written (a body that grows past it, below).
                // A response without a body (to HEAD, a 204, a 304) announces a size it does not send: never too large.
                let maxFileSize = request.method == .head || [204, 304].contains(response.status?.code) || failsAfterHead != nil
                    ? nil : options.maxFileSize
                if let maxFileSize, let length = response.expectedContentLength, length > maxFileSize {
                    bytes.task.cancel()
                    throw Self.tooLarge(url, limit: maxFileSize, announced: length)
                }
                // --compressed: a coding the session left on the body (unknown, or past five) is an error, as curl's 61. Not
                // on a range (-r), which is never decoded: a slice of a compressed body is written as it came.
                if compressed, failsAfterHead == nil, request.headerFields[.range] == nil, response.status?.code != 206,
                   let reason = Self.undecodedCoding(of: response, to: request.method) {
                    bytes.task.cancel()
                    throw LoadError(.cannotDecodeContentData, url: url, reason: reason)
                }
                if takesServerName, failsAfterHead == nil, !namedByServer, let name = response.dispositionFilename {
                    let path = inOutputDirectory(name)
                    // As curl's -J: a file already there is not overwritten.
                    guard !FileManager.default.fileExists(atPath: path) else {
                        bytes.task.cancel()
                        // Named by the file, as an output that cannot be written is (a local failure: 23).
                        throw LoadError(.cannotWriteToFile, url: URL(fileURLWithPath: path),
                                        reason: "-J: \(url.absoluteStringHidingPassword) names the file \(name), and \(path) exists already: not overwritten")
                    }
                    (destination, namedByServer) = (path, true)
                    summary.filename = path
                }
                let output = try OutputFile(path: madeByEarlierTry ?? destination, createDirectories: createDirectories, url: url,
                                            appends: offset > 0, keepsExisting: noClobber && madeByEarlierTry == nil)
                defer {
                    output.close()
                    // Not one appended to (-C): its bytes from before are the user's.
                    if output.opened, offset == 0 { writtenFile = output.path }
                    // --no-clobber may have written another name (%{filename_effective}).
                    if output.opened { summary.filename = output.path }
                }
                if destination != nil { tryOutput = output }
                if destination == nil, let ordered, !ordered.isNow {
                    spool = SpooledOutput(url: url, directory: session.configuration.temporaryDirectory.path)
                }
                let sink = spool
                func put(_ data: Data) throws {
                    if let sink { try sink.write(data) } else {
                        if destination == nil { wroteToStandardOutput = true }
                        try output.write(data)
                    }
                }
                if include || headOnly { try put(Data(Self.includedHeads(response, transactions: events?.transactions ?? []).utf8)) }
                let deadline = maxTime.flatMap { $0 > 0 ? started.advanced(by: .seconds($0)) : nil }
                func copyBody() async throws {
                    let pacer = options.rateLimit.map { RatePacer(bytesPerSecond: $0, deadline: deadline) }
                    var lowSpeed = LowSpeedLimit.Watch()
                    for try await chunk in bytes.chunks {
                        if let maxFileSize, summary.bytes + Int64(chunk.count) > maxFileSize {
                            bytes.task.cancel()
                            throw Self.tooLarge(url, limit: maxFileSize, announced: nil)
                        }
                        try put(chunk)
                        summary.bytes += Int64(chunk.count)
                        meter.update(received: summary.bytes, expected: response.expectedContentLength)
                        if let limit = options.lowSpeed, lowSpeed.tooSlow(total: summary.bytes, at: Self.seconds(since: started), under: limit) {
                            bytes.task.cancel()
                            throw limit.error(for: url)
                        }
                        do {
                            try await pacer?.pause(after: summary.bytes)
                        } catch is RatePacer.DeadlinePassed {
                            // As curl: -m holds however slowly --limit-rate reads what has arrived.
                            bytes.task.cancel()
                            throw LoadError(.timedOut, url: url, reason: "the transfer took longer than -m's \(maxTime?.printed("%g") ?? "") s (\(summary.bytes) bytes read at --limit-rate)")
                        }
                    }
                }
                if let failsAfterHead {
                    // The head went out; the error's body does not.
                    bytes.task.cancel()
                    httpError = failsAfterHead
                } else if headOnly {
                    // -I with another method (-X GET): the head alone, as curl's; the body is not read.
                    if request.method != .head { bytes.task.cancel() }
                } else if let length = response.expectedContentLength, length <= Self.smallBody {
                    try await copyBody()
                } else {
                    // Measured on a 512 MiB body: 0.43–0.51 s to a file this way, 0.60–1.86 s on the loop.
                    try await withTaskExecutorPreference(globalConcurrentExecutor) { try await copyBody() }
                }
                if let sink, let ordered {
                    await ordered.wait()
                    if !ordered.isSilenced { try sink.drain(into: output) }
                }
                try output.finish()
                try checkHeaderDump()
                if let httpError { return failed(withHTTPStatus: httpError, summary: &summary) }
                if remoteTime, let written = output.path { Self.stamp(written, with: response) }
                return 0
            } catch {
                let output = error as? OutputFile.Failure
                let resume = error as? ContinueAt.Failure
                let failure = events?.redirectRefusal ?? output?.error ?? resume?.error ?? LoadError.wrapping(error, url: url)
                let status = resume?.status ?? (output == nil ? LoadURLExit.status(for: failure) : LoadURLExit.cannotWriteOutput)
                // Aborted by --fail-early with -Z (another transfer failed): nothing more is told, as curl tells nothing of them.
                // Its status still counts for --remove-on-error, which takes its partial file away, as curl's cleanup does.
                if ordered?.isSilenced == true, Task.isCancelled {
                    summary.exitCode = LoadURLExit.status(for: .cancelled)
                    return summary.exitCode
                }
                if output == nil, resume == nil, retry.isTransient(failure), let wait = nextTry(retryAfter: nil) {
                    meter.finish()
                    await retrying(after: failure.description, wait: wait)
                    continue attempts
                }
                summary.exitCode = status
                summary.error = failure
                // A redirect not followed (--max-redirs, a scheme refused) is the last response, as curl's -w shows it.
                if let redirect = failure.underlying as? UnfollowedRedirect {
                    summary.response = redirect.response
                    // -i and -I: the heads that came before the redirect not followed, as curl writes heads as they come
                    // (to standard output, the transfers one after another).
                    if include || headOnly, destination == nil, ordered == nil,
                       let stdout = try? OutputFile(path: nil, createDirectories: false, url: url) {
                        try? stdout.write(Data(Self.includedHeads(redirect.response, transactions: events?.transactions ?? []).utf8))
                    }
                }
                // -v tells of the failure whatever -s says, as curl's does; a refused tunnel, with what was said (as curl).
                if verbose {
                    let tunnel = (failure.underlying as? ProxyTunnelRefused)?.dialogue.map { $0 + "\n" }.joined() ?? ""
                    StandardStreams.error(tunnel + "* \(failure.description)\n")
                }
                // The meter's line is cleared first, so that the message does not land at the end of it.
                meter.finish()
                report(failure.description, status: status)
                // What came before the failure goes out in its turn, as it would have gone out one transfer after another.
                if let spool, let ordered, output == nil, let stdout = try? OutputFile(path: nil, createDirectories: false, url: url) {
                    await ordered.wait()
                    try? spool.drain(into: stdout)
                }
                return status
            }
        }
    }

    /// As curl's `-R`, after a transfer that succeeded: a regular output file gets the resource's time; one that
    /// cannot be set is no failure of the transfer.
    /// Takes back what a failed try wrote to `path` after `offset`, for the retry that writes it again; the reason it
    /// cannot, if it cannot. A regular file is cut back (`truncate`); the null device kept nothing; anything else (a pipe,
    /// a FIFO, a terminal named as the output) cannot take bytes back, so the retry's would follow them.
    static func cutBack(_ path: String, to offset: Int64) -> Errno? {
        var status = stat()
        guard stat(path, &status) == 0 else { return Errno(rawValue: errno) }
        if status.st_mode & S_IFMT == S_IFREG {
            return truncate(path, off_t(offset)) == 0 ? nil : Errno(rawValue: errno)
        }
        var null = stat()
        if status.st_mode & S_IFMT == S_IFCHR, stat("/dev/null", &null) == 0, null.st_rdev == status.st_rdev { return nil }
        return .illegalSeek
    }

    private static func stamp(_ path: String, with response: LoadResponse) {
        guard let time = response.headerFields[.lastModified].flatMap(HTTPDate.parse),
              (try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType) == .typeRegular else { return }
        try? FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: path)
    }

    /// A body over `--max-filesize` (exit 63): its announced size, or (`nil`) one that grew past the limit.
    private static func tooLarge(_ url: URL, limit: Int64, announced: Int64?) -> LoadError {
        let what = announced.map { "the body is \($0) bytes" } ?? "the body grew past the limit"
        return LoadError(.dataLengthExceedsMaximum, url: url, reason: "\(what): --max-filesize allows \(limit) bytes")
    }

    /// Why `--compressed` leaves `response`'s body undecoded, in curl's terms, or `nil`: the session decodes every coding
    /// it knows, so a coding still named is one it does not (`compress`), or a stack deeper than five. A response
    /// without a body has nothing to decode.
    static func undecodedCoding(of response: LoadResponse, to method: HTTPRequest.Method) -> String? {
        guard method != .head, ![204, 304].contains(response.status?.code), response.expectedContentLength != 0,
              let field = response.headerFields[.contentEncoding] else { return nil }
        let codings = field.split(separator: ",").map { $0.trimmingSpaces().lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        guard !codings.isEmpty else { return nil }
        if codings.count > ContentDecoding.deepestStack {
            return "the response names \(codings.count) content encodings, more than the \(ContentDecoding.deepestStack) that are decoded"
        }
        return "unrecognized content encoding '\(field)': loadurl decodes \(ContentDecoding.names.joined(separator: ", "))"
    }

    /// Whether an HTTP status of 400 or more fails the transfer (`-f`, `--fail-with-body`).
    private var failsOnHTTPError: Bool { failOnHTTPError || failWithBody }

    /// Reports an HTTP error status as `-f` does; returns its exit status (22).
    private func failed(withHTTPStatus status: Int, summary: inout TransferSummary) -> Int32 {
        summary.exitCode = LoadURLExit.httpError
        summary.failureMessage = "The requested URL returned error: \(status)"
        report("The requested URL returned error: \(status) (\(summary.url.absoluteStringHidingPassword))", status: LoadURLExit.httpError)
        return LoadURLExit.httpError
    }

    /// Starts loading `request`; from a positive `offset` (`-C`), asks for the bytes from there on (over HTTP, if
    /// the resource is unmodified since `writtenAt`, when the partial file was last written) and takes the answer
    /// only if it is that rest. `nil` when the output is whole already. Throws ``ContinueAt/Failure`` when the
    /// rest cannot be had, having touched no file. Records the response in `summary` (for `-w`) either way.
    private func startLoad(_ request: LoadRequest, from offset: Int64, writtenAt: Int?, options: RequestOptions, session: LoaderSession,
                           events: TransferEvents?,
                           summary: inout TransferSummary, passesTransient: Bool) async throws -> (LoadBytes, LoadResponse)? {
        guard offset > 0 else {
            do {
                return try await session.bytes(for: request, delegate: events)
            } catch let error as LoadError where Self.rangeStartsAtEnd(error, of: request) {
                // As curl: -r from exactly the end of a file is nothing more to get, not an error (past it, 36).
                return nil
            }
        }
        let isHTTP = request.scheme == "http" || request.scheme == "https"
        var ranged = request
        ranged.headerFields[.range] = "bytes=\(offset)-"
        // A condition of the caller's own (-H 'If-Range: …') stands in its place, and -H 'If-Unmodified-Since:'
        // (curl's way to send no such field) goes without: the partial file's time is the client's clock, and
        // its last write, not when its first bytes came.
        let declined = (try? options.headerLines.get())?.removed.contains(.ifUnmodifiedSince) ?? false
        if isHTTP, !declined, let writtenAt, ranged.headerFields[.ifRange] == nil, ranged.headerFields[.ifUnmodifiedSince] == nil {
            ranged.headerFields[.ifUnmodifiedSince] = IMFFixdate.string(fromUnixTime: writtenAt)
        }
        func failure(_ reason: String, _ status: Int32, underlying: (any Error)? = nil) -> ContinueAt.Failure {
            ContinueAt.Failure(error: LoadError(.resourceUnavailable, url: request.url, reason: "cannot go on from byte \(offset): \(reason)",
                                                underlying: underlying), status: status)
        }
        let started: (LoadBytes, LoadResponse)
        do {
            started = try await session.bytes(for: ranged, delegate: events)
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
        if failsOnHTTPError, let status = response.status?.code, status >= 400, status != 412, status != 416 { return started }
        if passesTransient, let status = response.status?.code, options.retry.retries(status: status, failsOnHTTPError: failsOnHTTPError) { return started }
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

    /// Whether `error` refused `request`'s range (`-r N-` or `-r N-M`) because it starts exactly at the resource's end.
    static func rangeStartsAtEnd(_ error: LoadError, of request: LoadRequest) -> Bool {
        guard let size = (error.underlying as? RangeNotSatisfiable)?.size,
              let range = request.headerFields[.range], range.hasPrefix("bytes="),
              let first = Int64(range.dropFirst("bytes=".count).prefix { $0 != "-" }) else { return false }
        return first == size
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

    /// The file for the URL at `index`, or `nil` for standard output.
    private func outputPath(for url: URL, index: Int) -> String? {
        let name: String
        switch outputArgument(index) {
        case "-": return nil
        case Self.remoteNameSlot:
            if let remote = Self.remoteName(of: url) {
                name = remote
            } else {
                name = Self.noRemoteName
                if !silent || showError { StandardStreams.error("loadurl: warning: no file name in \(url.absoluteString); saving as \(name)\n") }
            }
        case let given: name = given
        }
        return inOutputDirectory(name)
    }

    /// `name` in `--output-dir`'s folder when one is given (an absolute name stays as it is).
    private func inOutputDirectory(_ name: String) -> String {
        if let outputDirectory, !outputDirectory.isEmpty, !name.hasPrefix("/") {
            return outputDirectory.hasSuffix("/") ? outputDirectory + name : outputDirectory + "/" + name
        }
        return name
    }

    /// The name `-O` saves `url` under: the last segment of its path as written, not percent-decoded (as curl's),
    /// so that an encoded slash or a dot-dot cannot lead the file out of the folder; `nil` when there is none.
    static func remoteName(of url: URL) -> String? {
        let last = url.path(percentEncoded: true).split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        return last.isEmpty || last == "." || last == ".." ? nil : String(last)
    }

    /// What `-O` saves a URL with no file name under: curl's name since 8.10 (which scripts written for it look
    /// for), with no extension, since nothing in the URL says what the body is.
    static let noRemoteName = "curl_response"

    /// Whether a progress bar is drawn: not when silenced, nor to a terminal that also shows the body.
    private func showsProgress(toStdout: Bool) -> Bool {
        !silent && !noProgressMeter && isatty(STDERR_FILENO) == 1 && !(toStdout && isatty(STDOUT_FILENO) == 1)
    }

    /// Writes a failure to standard error as curl does (`-s` hides it, `-S` shows it again).
    func report(_ message: String, status: Int32) {
        guard !silent || showError else { return }
        StandardStreams.error("loadurl: (\(status)) \(message)\n")
    }

    /// Writes `-w`'s line for a transfer, its pieces in order, those after a `%{stderr}` to standard error; with
    /// `ordered`, the standard output's in the transfer's turn, which it ends (the standard error's at once).
    func summarize(_ summary: TransferSummary, format: String?, index: Int, ordered: OutputTurn?) {
        let text = format.flatMap { $0.isEmpty ? nil : summary.format($0) }
        guard let ordered else {
            for piece in text?.pieces ?? [] {
                if piece.toError { StandardStreams.error(piece.text) } else { StandardStreams.output(piece.text) }
            }
            return
        }
        if let error = text?.error, !error.isEmpty { StandardStreams.error(error) }
        ordered.finish(with: text?.output ?? "")
    }
}
