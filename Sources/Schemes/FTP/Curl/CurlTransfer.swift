import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import FoundationEssentials
import HTTPTypes
import Loader
import Synchronization

/// One FTP transfer: a libcurl easy handle, set up from the request, and the callbacks that report its
/// events to the handler's client.
///
/// The body goes to the client in batches: libcurl passes it to the write callback in pieces of at most
/// 16 KiB (`CURL_MAX_WRITE_SIZE`), which are gathered into one buffer of ``largestBatch`` bytes (reused, see
/// ``BatchBuffers``) while the engine reads what is waiting (see `CurlEngine.run`). Each hand-over takes
/// the driver's lock and may wake the reader's thread; per 16 KiB piece that was most of the transfer's cost.
///
/// Backpressure: after each batch, a reader without room pauses the transfer (`curl_easy_pause`) until it
/// has room again, so a slow reader stops the transfer (and, through TCP, the server) instead of growing
/// memory. What libcurl still passes on after a pause (the rest of its current read) waits in the next batch.
final class CurlTransfer: @unchecked Sendable {
    // @unchecked: `easy`, `responseSent`, `batch`, `batchCount`, `isNoted` and `hasEnded` are used on the
    // engine's thread only (libcurl calls its callbacks there); the rest is atomic, locked or immutable.

    /// The most bytes gathered for one hand-over: small against the reader's buffer (`bodyBufferLimit`, 2 MiB
    /// by default), which the reader's room is checked against once per batch.
    static let largestBatch = 512 * 1024

    let easy: UnsafeMutableRawPointer
    let url: URL
    private let engine: CurlEngine
    private let handler: SchemeHandler
    private let client: any SchemeHandlerClient
    private let isListing: Bool
    private let isHead: Bool
    private let upload: UploadBuffer?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var responseSent = false
    /// Where body bytes received and not yet handed to the reader are gathered, and how many there are.
    private var batch: UnsafeMutableRawPointer?
    private var batchCount = 0
    private let buffers = BatchBuffers(size: CurlTransfer.largestBatch)
    /// Whether the engine knows this transfer holds bytes for a hand-over.
    private var isNoted = false
    /// Body bytes still to come of a whole file whose size the server told, counted down as they come: at 0 they
    /// are handed over at once, since libcurl (7.88) then waits for the `226` inside the call that read them, up to
    /// a minute, before the engine's hand-over would run.
    private var bytesToCome: Int64?
    private(set) var hasEnded = false
    private var isCleanedUp = false
    /// The lists given to libcurl (`resolve`, `connectTo`, commands, proxy fields), freed once the handle is.
    private var lists: [UnsafeMutablePointer<curl_slist>] = []
    private var lastReportedUpload: Int64 = -1
    /// Set while the transfer is configured, before the engine has it; read on the engine's thread after.
    /// The first byte a range asks for, and its last (`nil`: to the end), for the response's `Content-Range`;
    /// `nil` without a range or for a suffix range (`bytes=-n`), whose start depends on a size not known here.
    private var rangeStart: Int64?
    private var rangeEnd: Int64?
    /// The server's last refusal (a 4xx or 5xx reply line, such as `550 Permission denied.`): libcurl's message
    /// says only which command failed, and the server's words say why.
    private var lastRefusal: String?
    /// The code of the server's last reply line (0 before any): a refusal's code while `lastRefusal` is set, and what a
    /// failure right after `AUTH TLS` means.
    private var lastReplyCode = 0
    /// Which kept connections this transfer may use (its session's, under its TLS settings), and how long they
    /// stay idle; `nil` for a connection of its own, closed at its end (``FTPOptions/idleConnectionTimeout`` 0).
    let connectionReuse: (key: ShareKey, idleTimeout: UInt64)?

    /// What kept connections must have in common to serve a transfer beyond what libcurl compares itself.
    struct ShareKey: Hashable {
        let session: Int
        let tls: FTPOptions.TLSUse
        /// The proxy, its exceptions, an HTTPS proxy's checks and the fields sent to it: a connection made through one is
        /// not the one a load without it wants (libcurl reuses a tunnel whatever fields opened it).
        let proxy: [String?]
        /// The `resolve` and `connectTo` entries: a connection made to an address they chose is not the name's own.
        let routes: [String]
        let trustRootsPEMFile: String?
        let verifiesCertificates: Bool
        /// The pinned public keys: a connection made without them was not checked against them.
        let pinnedPublicKeys: Set<String>
        /// The lowest and highest TLS versions (none for plain FTP): a connection that speaks one outside them is not used.
        let tlsVersions: [TLSProtocolVersion]
        /// The client certificate, its key and passphrase: a connection shows the server one identity only.
        let clientIdentity: [String?]
        /// The certificate's and key's files as they are now: kept connections (and their TLS sessions) made with a
        /// certificate since renewed in place are not used again.
        let clientIdentityFiles: [FileStamp]
    }
    /// The client certificate the transfer shows an FTPS server, and its key's file, if any, for an error that names them.
    private let clientCertificatePEMFile: String?
    private let clientPrivateKeyPEMFile: String?
    /// The pins the transfer was given, each `sha256//…`, sorted: for libcurl, and for the error that says none matched.
    private let pins: [String]
    /// The proxy the transfer goes through, as given, if any: its host names the proxy in an error.
    private let proxy: String?
    /// Whether the engine gave this transfer its session's share handle (engine thread only).
    var usesSharedConnections = false
    /// The share handle of its own that holds the connection of a transfer that keeps none, which the engine frees
    /// off its thread when the transfer ends (engine thread only).
    var ownShare: UnsafeMutableRawPointer?
    /// Whether the transfer failed on a kept connection that had gone away, before anything reached the reader:
    /// the handler then tries once more on a new connection. Set on the engine's thread before the transfer's
    /// completion is resumed, read by the handler after it.
    var failedOnLostKeptConnection: Bool { lostKeptConnection.load(ordering: .acquiring) }
    // Atomic, not a plain field: the thread sanitizer reported the handler's read against the engine's write
    // (1 run in 8) though the continuation's resume lies between them.
    private let lostKeptConnection = Atomic<Bool>(false)

    /// Whether the reader has room for another chunk.
    private let hasRoom = Atomic<Bool>(true)
    /// Whether libcurl was told to pause (and so must be resumed when room comes).
    private let paused = Atomic<Bool>(false)
    /// Whether an upload waits for its body's next bytes (libcurl paused by `CURL_READFUNC_PAUSE`); engine thread only.
    private var uploadWaiting = false

    /// Whether libcurl holds this transfer paused, receiving or sending (engine thread): it then watches none of its
    /// sockets, rightly, and the engine need not come back for it soon.
    var isPaused: Bool { uploadWaiting || paused.load(ordering: .relaxed) }

    /// Notes that the engine resumed the transfer (engine thread).
    func noteResumed() {
        uploadWaiting = false
    }
    /// Set when the load is stopped, before the engine hears of it: bytes libcurl still passes on meanwhile
    /// are dropped, not handed to a reader that is gone, and a paused transfer is not resumed.
    private let stopped = Atomic<Bool>(false)

    /// Marks the transfer stopped (see `stopped`); the engine's `.cancel` then ends it.
    func markStopped() {
        stopped.store(true, ordering: .releasing)
    }
    private let completion = Locked<CheckedContinuation<Void, any Error>?>(nil)
    /// The talk with the server, kept only for a load that collects metrics (engine thread).
    private var dialogue: FTPDialogue?
    /// When the transfer was made, for its metrics.
    private let fetchStart = Date()

    /// - Parameter newConnection: Connect anew even if the session keeps a connection to the server (a retry
    ///   after a kept connection was lost); the new one is kept in turn.
    init(handler: SchemeHandler, credential: Credential?, engine: CurlEngine, newConnection: Bool = false) throws {
        let request = handler.request
        guard let easy = ccurl_easy_init() else { throw LoadError(.unknown, url: request.url, reason: "libcurl could not make a handle") }
        self.easy = easy
        self.url = request.url
        self.engine = engine
        self.handler = handler
        self.client = handler.client
        if client.collectsMetrics { dialogue = FTPDialogue() }
        self.isHead = request.method == .head
        let isUpload = request.method == .put
        // A folder's path ends with a slash; a URL with no path at all (ftp://host) names the root folder, as libcurl lists it.
        let path = request.url.path(percentEncoded: true)
        self.isListing = !isUpload && (path.isEmpty || path.hasSuffix("/"))
        self.upload = isUpload ? UploadBuffer(body: request.body ?? .bytes(Data())) : nil
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let options = request.options[FTPOptions.self]
        self.clientPrivateKeyPEMFile = options.clientPrivateKeyPEMFile
        self.clientCertificatePEMFile = options.clientCertificatePEMFile
        self.pins = options.pinnedPublicKeys.map { $0.hasPrefix("sha256//") ? $0 : "sha256//" + $0 }.sorted()
        self.proxy = options.proxy
        // The key (and the identity files' stat calls) only for a session that keeps connections. Not for a load with
        // commands of its own to send: they may change the connection's state (its folder, its type) for the loads after,
        // and libcurl sends them on a kept connection where the folder is the last load's. It gets a connection of its
        // own, in the login folder, closed after it.
        let sendsCommands = !(options.commandsAfterLogin.isEmpty && options.commandsBeforeTransfer.isEmpty && options.commandsAfterTransfer.isEmpty)
        self.connectionReuse = sendsCommands ? nil : options.idleConnectionNanoseconds.map { idleTimeout in
            let key = ShareKey(session: request.sessionIdentifier ?? 0, tls: options.tls,
                               proxy: [options.proxy, options.noProxy, options.proxyTrustRootsPEMFile, options.proxyVerifiesCertificates ? nil : "unchecked"]
                                   + options.proxyHeaderLines,
                               routes: options.resolveLines + ["--"] + options.connectToLines,
                               trustRootsPEMFile: options.trustRootsPEMFile,
                               verifiesCertificates: options.verifiesCertificates,
                               pinnedPublicKeys: options.pinnedPublicKeys,
                               tlsVersions: request.scheme == "ftps" || options.tls != .never ? [options.minimumTLSVersion, options.maximumTLSVersion] : [],
                               clientIdentity: [options.clientCertificatePEMFile, options.clientPrivateKeyPEMFile, options.clientPrivateKeyPassphrase],
                               clientIdentityFiles: FileStamp.of(options.clientCertificatePEMFile, options.clientPrivateKeyPEMFile))
            return (key: key, idleTimeout: idleTimeout)
        }
        try configure(request, options: options, credential: credential, newConnection: newConnection)
    }

    deinit {
        // Normally freed by `end()` on the engine's thread; here only if it never ran.
        if !isCleanedUp { ccurl_easy_cleanup(easy) }
        lists.forEach { ccurl_list_free($0) }
        batch?.deallocate()
        errorBuffer.deallocate()
    }

    /// Sets a list option of libcurl's to `lines`, keeping the list until the transfer is freed.
    private func setLines(_ option: CURLoption, _ lines: [String]) -> CURLcode {
        withLines(lines) { pointers, count in
            var list: UnsafeMutablePointer<curl_slist>?
            let code = ccurl_setopt_lines(easy, option, pointers, count, &list)
            if let list { lists.append(list) }
            return code
        }
    }

    private func configure(_ request: LoadRequest, options: FTPOptions, credential: Credential?, newConnection: Bool) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var codes: [CURLcode] = []
        codes.append(ccurl_setopt_string(easy, CURLOPT_URL, request.url.absoluteString))
        codes.append(ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        if let reuse = connectionReuse {
            // The session's kept connections (the engine hands over their share); libcurl reuses one only for the
            // same server, login and TLS settings, and none idle for longer than this.
            let seconds = (reuse.idleTimeout + 999_999_999) / 1_000_000_000
            codes.append(ccurl_setopt_long(easy, CURLOPT_MAXAGE_CONN, Int(min(seconds, UInt64(Int32.max)))))
            // An upload connects anew (and leaves its connection for later loads), so it never meets a kept
            // connection the server dropped: it is not retried, the server may have begun writing the file.
            if newConnection || upload != nil { codes.append(ccurl_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1)) }
        } else {
            // Closed when the load ends, by the engine freeing its share of its own (or, without one, by libcurl:
            // ``useConnectionOfItsOwn()``).
            codes.append(ccurl_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1))
        }
        codes.append(ccurl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
        codes.append(ccurl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWrite))
        codes.append(ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
        // libcurl hands an FTP server's replies to the header callback.
        codes.append(ccurl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeader))
        codes.append(ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, context))
        if dialogue != nil { codes.append(ccurl_setopt_debug_callback(easy, curlDebug, context)) }
        // Reads of 512 KiB against libcurl's 16 KiB default: fewer system calls and engine rounds, and a fast
        // server fills them. (The write callback still gets the body in pieces of 16 KiB at most.)
        codes.append(ccurl_setopt_long(easy, CURLOPT_BUFFERSIZE, 512 * 1024))
        codes.append(ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds))
        // CURL_IPRESOLVE_V4 is 1, CURL_IPRESOLVE_V6 is 2 (and WHATEVER, the default, 0).
        for (option, lines) in [(CURLOPT_RESOLVE, options.resolveLines), (CURLOPT_CONNECT_TO, options.connectToLines)] where !lines.isEmpty {
            codes.append(setLines(option, lines))
        }
        if options.addressFamily != .any { codes.append(ccurl_setopt_long(easy, CURLOPT_IPRESOLVE, options.addressFamily == .ipv4 ? 1 : 2)) }
        if options.usesActiveMode { codes.append(ccurl_setopt_string(easy, CURLOPT_FTPPORT, options.activeModeAddress ?? "-")) }
        // Always set: libcurl would otherwise read the environment's ftp_proxy and all_proxy on its own.
        codes.append(ccurl_setopt_string(easy, CURLOPT_PROXY, options.proxy ?? ""))
        if let proxy = options.proxy, !proxy.isEmpty, !proxy.lowercased().hasPrefix("socks") {
            // Through an HTTP proxy, FTP itself in a tunnel, not FTP turned into an HTTP GET the proxy makes.
            codes.append(ccurl_setopt_long(easy, CURLOPT_HTTPPROXYTUNNEL, 1))
        }
        if let noProxy = options.noProxy { codes.append(ccurl_setopt_string(easy, CURLOPT_NOPROXY, noProxy)) }
        if !options.proxyHeaderLines.isEmpty {
            guard !options.proxyHeaderLines.contains(where: FTPOptions.breaksLine) else {
                throw LoadError(.unsupportedURL, url: url, reason: "a field for the proxy holds a line break or a NUL")
            }
            // CURLHEADER_SEPARATE is 1: these go to the proxy alone.
            codes.append(ccurl_setopt_long(easy, CURLOPT_HEADEROPT, 1))
            codes.append(setLines(CURLOPT_PROXYHEADER, options.proxyHeaderLines))
        }
        if let roots = options.proxyTrustRootsPEMFile { codes.append(ccurl_setopt_string(easy, CURLOPT_PROXY_CAINFO, roots)) }
        if !options.proxyVerifiesCertificates {
            codes.append(ccurl_setopt_long(easy, CURLOPT_PROXY_SSL_VERIFYPEER, 0))
            codes.append(ccurl_setopt_long(easy, CURLOPT_PROXY_SSL_VERIFYHOST, 0))
        }
        if request.scheme == "ftp", options.tls != .never {
            // CURLUSESSL_TRY is 1, CURLUSESSL_ALL is 3.
            codes.append(ccurl_setopt_long(easy, CURLOPT_USE_SSL, options.tls == .required ? 3 : 1))
        }
        if request.scheme == "ftps" || options.tls != .never {
            try TLSProtocolVersion.check(from: options.minimumTLSVersion, through: options.maximumTLSVersion, url: url)
            codes.append(ccurl_setopt_long(easy, CURLOPT_SSLVERSION, Self.sslVersion(options.minimumTLSVersion, through: options.maximumTLSVersion)))
        }
        if let roots = options.trustRootsPEMFile { codes.append(ccurl_setopt_string(easy, CURLOPT_CAINFO, roots)) }
        if !pins.isEmpty {
            codes.append(ccurl_setopt_string(easy, CURLOPT_PINNEDPUBLICKEY, pins.joined(separator: ";")))
        }
        if let certificate = options.clientCertificatePEMFile {
            codes.append(ccurl_setopt_string(easy, CURLOPT_SSLCERT, certificate))
            codes.append(ccurl_setopt_string(easy, CURLOPT_SSLKEY, options.clientPrivateKeyPEMFile ?? certificate))
            // Always a passphrase, empty if none was given: without one OpenSSL may ask for it on the terminal.
            codes.append(ccurl_setopt_string(easy, CURLOPT_KEYPASSWD, options.clientPrivateKeyPassphrase ?? ""))
        }
        if !options.verifiesCertificates {
            codes.append(ccurl_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 0))
            codes.append(ccurl_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 0))
        }
        if let credential {
            codes.append(ccurl_setopt_string(easy, CURLOPT_USERNAME, credential.user))
            codes.append(ccurl_setopt_string(easy, CURLOPT_PASSWORD, credential.password))
        }
        if isHead { codes.append(ccurl_setopt_long(easy, CURLOPT_NOBODY, 1)) }
        // Asks for the file's time (MDTM) for Last-Modified; a listing has none.
        if !isListing, upload == nil, options.readsModificationDate { codes.append(ccurl_setopt_long(easy, CURLOPT_FILETIME, 1)) }
        if isListing, options.listsNamesOnly { codes.append(ccurl_setopt_long(easy, CURLOPT_DIRLISTONLY, 1)) }
        let commands = [(CURLOPT_QUOTE, options.commandsAfterLogin), (CURLOPT_PREQUOTE, options.commandsBeforeTransfer),
                        (CURLOPT_POSTQUOTE, options.commandsAfterTransfer)]
        // A line break would end the command and start another the caller never wrote.
        if let broken = commands.flatMap(\.1).first(where: FTPOptions.breaksLine) {
            throw LoadError(.unsupportedURL, url: url, reason: "an FTP command to send holds a line break or a NUL: \(broken.debugDescription)")
        }
        for (option, lines) in commands where !lines.isEmpty { codes.append(setLines(option, lines)) }
        if let header = request.headerFields[.range] {
            guard let range = Self.curlRange(header) else {
                throw LoadError(.resourceUnavailable, url: url, reason: "cannot serve the range \(header) over FTP")
            }
            codes.append(ccurl_setopt_string(easy, CURLOPT_RANGE, range))
            let bounds = range.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            rangeStart = Int64(bounds[0])
            rangeEnd = Int64(bounds[1])
        }
        if let upload {
            codes.append(ccurl_setopt_long(easy, CURLOPT_UPLOAD, 1))
            codes.append(ccurl_setopt_data_callback(easy, CURLOPT_READFUNCTION, curlRead))
            codes.append(ccurl_setopt_pointer(easy, CURLOPT_READDATA, context))
            if let length = upload.knownLength { codes.append(ccurl_setopt_off(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(length))) }
            // CURLFTP_CREATE_DIR is 1.
            if options.createsMissingDirectories { codes.append(ccurl_setopt_long(easy, CURLOPT_FTP_CREATE_MISSING_DIRS, 1)) }
            if options.appendsUploads { codes.append(ccurl_setopt_long(easy, CURLOPT_APPEND, 1)) }
            codes.append(ccurl_setopt_long(easy, CURLOPT_NOPROGRESS, 0))
            codes.append(ccurl_setopt_progress_callback(easy, curlProgress))
            codes.append(ccurl_setopt_pointer(easy, CURLOPT_XFERINFODATA, context))
        }
        if let failed = codes.first(where: { $0 != CURLE_OK }) {
            throw CurlErrorMapping.map(failed, message: "", url: url)
        }
    }

    /// A control connection of its own, closed by libcurl when the load ends (its `QUIT` awaited on the engine's
    /// thread): for a transfer the engine could not give a share (then on the engine's thread, before it joins the
    /// multi handle). Returns libcurl's answers.
    @discardableResult
    func useConnectionOfItsOwn() -> [CURLcode] {
        [ccurl_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1), ccurl_setopt_long(easy, CURLOPT_FORBID_REUSE, 1)]
    }

    /// The `Content-Range` of `length` bytes sent for a range from `first` (to `last`, or to the end): with the
    /// file's size when the range ran to its end, which it did if it was open or stopped short of its last byte;
    /// `nil` when nothing was sent (a range from the file's size, which libcurl ends as "already completely
    /// downloaded", or one past the end of a server without `SIZE`: the two look alike from here); `nil` too for a
    /// length no file has (a server's reply may claim any, and the sum would overflow).
    static func contentRange(from first: Int64, to last: Int64?, length: Int64) -> String? {
        guard length > 0 else { return nil }
        let (past, overflow) = first.addingReportingOverflow(length)
        guard !overflow else { return nil }
        let end = past - 1
        let ranToEnd = last.map { end < $0 } ?? true
        return "bytes \(first)-\(end)/" + (ranToEnd ? String(end + 1) : "*")
    }

    /// libcurl's `CURLOPT_SSLVERSION` for TLS from `lowest` through `highest`: the lowest's `CURL_SSLVERSION_TLSv1_x`
    /// (6 for 1.2, 7 for 1.3) with the highest's `CURL_SSLVERSION_MAX_TLSv1_x` (the same number, shifted 16 bits up).
    static func sslVersion(_ lowest: TLSProtocolVersion, through highest: TLSProtocolVersion) -> Int {
        func number(_ version: TLSProtocolVersion) -> Int { version == .tls12 ? 6 : 7 }
        return number(lowest) | number(highest) << 16
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n` as libcurl's range text (`a-b`, `a-`, `-n`); `nil` for
    /// anything else (several ranges, other units).
    static func curlRange(_ header: String) -> String? {
        let value = header.trimmingSpaces()
        guard value.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = String(value.dropFirst("bytes=".count).trimmingSpaces())
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !(parts[0].isEmpty && parts[1].isEmpty),
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        else { return nil }
        if let first = Int64(parts[0]), let last = Int64(parts[1]), last < first { return nil }
        return spec
    }

    // MARK: Ending

    /// For an upload, starts reading its body and waits for its first bytes (or its end) before any connection is
    /// made; throws the body's failure, or cancellation, if one comes first. A server told to store a file empties
    /// it at once, so a body that cannot be read (a missing file) must fail before that.
    func startUpload() async throws {
        guard let upload else { return }
        upload.start(resume: { [weak self, engine] in self.map { engine.submit(.resume($0)) } })
        await withTaskCancellationHandler { await upload.waitForStart() } onCancel: { upload.stop() }
        if let failure = upload.failure { throw LoadError.wrapping(failure, url: url) }
        if Task.isCancelled { throw LoadError(.cancelled, url: url) }
    }

    func setCompletion(_ continuation: CheckedContinuation<Void, any Error>) {
        completion.withLock { $0 = continuation }
    }

    /// Called once on the engine's thread, after the handle left the multi handle.
    func end(_ result: Result<Void, LoadError>) {
        guard !hasEnded else { return }
        hasEnded = true
        upload?.stop()
        if case .success = result, !responseSent { sendResponse(bodyEnded: true) }
        // What arrived goes to the reader before the end, as it would have one chunk at a time; a
        // cancelled load has no reader left.
        if case .failure(let error) = result, error.code == .cancelled {
            batchCount = 0
        } else {
            handOverPending()
        }
        buffers.close()
        batch?.deallocate()
        batch = nil
        // A failure before any response: the talk that led to it; nothing once the load was stopped (the contract: no
        // event after a stop).
        if case .failure(let error) = result, error.code == .cancelled || stopped.load(ordering: .acquiring) {
            dialogue = nil
        }
        reportDialogue()
        // On the engine's thread, like every other call on the handle (libcurl is not thread-safe).
        ccurl_easy_cleanup(easy)
        isCleanedUp = true
        let continuation = completion.withLock { slot in defer { slot = nil }; return slot }
        continuation?.resume(with: result.mapError { $0 as any Error })
    }

    /// Calls `body` with `lines` as C strings, valid during the call.
    private func withLines(_ lines: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>, Int32) -> CURLcode) -> CURLcode {
        let copies = lines.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!, Int32(lines.count)) }
    }

    func error(for code: CURLcode) -> LoadError {
        if let bodyError = upload?.failure { return LoadError.wrapping(bodyError, url: url) }
        // A refusal in the final reply is the server's doing: told as one below, with its words.
        if let upload, code == CURLE_PARTIAL_FILE, lastRefusal == nil {
            // libcurl's "uploaded unaligned file size": the body, not the connection, was short (or long).
            let announced = upload.knownLength.map { " the \($0) bytes it announced" } ?? " its announced length"
            let said = String(cString: errorBuffer)
            return LoadError(.requestBodyStreamExhausted, url: url, reason: "the request body did not give\(announced)" + (said.isEmpty ? "" : " (\(said))"))
        }
        // The refusal libcurl failed on, read from the reply itself: libcurl's own record of the last reply code
        // (CURLINFO_RESPONSE_CODE) is taken after the QUIT it sends as the connection closes, and did not name
        // the 550 of a missing file in a test.
        let reply = lastRefusal == nil ? 0 : lastReplyCode
        if usesSharedConnections, !responseSent, upload == nil, CurlErrorMapping.isLostConnection(code, serverReply: reply) {
            // Made no connection at all: it ran on a kept one and failed before opening a passive data connection
            // (which libcurl counts too), in the commands a dropped connection fails on first. A failure later
            // came from a server that was still there, and is not retried.
            var made = -1
            ccurl_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &made)
            lostKeptConnection.store(made == 0, ordering: .releasing)
        }
        var error = CurlErrorMapping.map(code, message: String(cString: errorBuffer), url: url, serverReply: reply, isUpload: upload != nil)
        // The proxy's failure, named: libcurl 7.88 tells a SOCKS proxy's name not found as a host's (its message names it).
        // Its host read only now: most transfers never fail, and none that fails often.
        if let proxyHost = proxy.flatMap({ URLComponents(string: $0.contains("://") ? $0 : "http://" + $0)?.host }), error.underlying is ProxyFailure
            || (code == CURLE_COULDNT_RESOLVE_HOST && String(cString: errorBuffer).contains(proxyHost)) {
            error.underlying = ProxyFailure((error.underlying as? ProxyFailure)?.step ?? .nameLookup, proxy: proxyHost)
        }
        if code == CURLE_SSL_PINNEDPUBKEYNOTMATCH {
            let mismatch = PublicKeyPinMismatch(found: nil, pinned: pins)
            error.underlying = mismatch
            error.reason = "\(mismatch) (libcurl \(code.rawValue))"
        }
        if code == CURLE_SSL_CERTPROBLEM, let clientCertificatePEMFile {
            // libcurl could not use the client certificate or its key: the caller's files, not the server. Its
            // message says which: "unable to set private key file", or "could not load PEM client certificate …
            // (no key found, wrong pass phrase, or wrong file format?)", whose "key" is no sign of the key file.
            let keyAtFault = String(cString: errorBuffer).lowercased().contains("private key")
            error.underlying = ClientIdentityError(path: keyAtFault ? clientPrivateKeyPEMFile ?? clientCertificatePEMFile : clientCertificatePEMFile,
                                                   cause: nil)
        }
        if code == CURLE_COULDNT_CONNECT {
            // The system's reason (a refusal, an unreachable network), as the `POSIXError` an HTTP load's is.
            var systemError = 0
            ccurl_getinfo_long(easy, CURLINFO_OS_ERRNO, &systemError)
            if let cause = POSIXError(errno: Int32(systemError)) { error.underlying = cause }
        }
        if let lastRefusal {
            error.reason = (error.reason.map { $0 + "; " } ?? "") + "the server said: \(lastRefusal)"
            // The reply itself, for a caller to read (a 4xx is worth trying again); a cause already set stays.
            if error.underlying == nil { error.underlying = FTPReply(code: lastReplyCode, text: lastRefusal) }
        }
        if code == CURLE_QUOTE_ERROR {
            error.underlying = FTPCommandRefused(reply: lastRefusal.map { FTPReply(code: lastReplyCode, text: $0) })
        }
        if code == CURLE_REMOTE_ACCESS_DENIED {
            error.underlying = FTPFolderRefused(reply: lastRefusal.map { FTPReply(code: lastReplyCode, text: $0) })
        }
        if error.code == .networkConnectionLost, lastReplyCode == 234 {
            // Broken just after the TLS handshake that AUTH TLS began, before any reply over it: under TLS 1.3 a
            // server refuses a client certificate (or its absence) so, and libcurl does not always read its alert.
            error.reason = (error.reason.map { $0 + "; " } ?? "") +
                "the server closed the connection right after the TLS handshake, as one does that wants a client certificate or refuses the one shown"
        }
        return error
    }

    // MARK: Callbacks (engine thread)

    /// - Parameter bodyEnded: The transfer ended before any body byte came: a download's body is empty then,
    ///   whatever libcurl's length says (for a range from the file's size it still gives the file's).
    private func sendResponse(bodyEnded: Bool = false) {
        responseSent = true
        var fields = HTTPFields()
        if !isListing, upload == nil {
            fields[.contentType] = PathContentTypes.type(forPath: url.path(percentEncoded: false))
        } else if isListing {
            fields[.contentType] = "text/plain; charset=utf-8"
        }
        var length: curl_off_t = -1
        if upload != nil || (bodyEnded && !isHead && !isListing) {
            length = 0
        } else {
            ccurl_getinfo_off(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        }
        if length >= 0 { fields[.contentLength] = String(length) }
        if length > 0, upload == nil, !isListing, rangeStart == nil { bytesToCome = Int64(length) }
        if let rangeStart, upload == nil, !isListing, length >= 0 {
            fields[.contentRange] = Self.contentRange(from: rangeStart, to: rangeEnd, length: Int64(length))
        }
        var modified: curl_off_t = -1
        if !isListing, upload == nil, ccurl_getinfo_off(easy, CURLINFO_FILETIME_T, &modified) == CURLE_OK, modified > 0 {
            fields[.lastModified] = IMFFixdate.string(fromUnixTime: Int(modified))
        }
        // The contract: a transaction before the response it belongs to, so the dialogue up to the transfer's start.
        reportDialogue()
        client.handler(handler, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
    }

    fileprivate func received(_ bytes: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        // For HEAD libcurl writes what it learnt ("Content-Length: …") as text; the response says it instead.
        if isHead || stopped.load(ordering: .acquiring) { return count }
        if !responseSent { sendResponse() }
        if !isNoted {
            isNoted = true
            engine.noteBatch(self)
        }
        // A piece that does not fit ends the batch, which is then full (pieces are 16 KiB at most).
        if batchCount + count > Self.largestBatch { handOverCheckingRoom() }
        guard count <= Self.largestBatch else {
            // Not expected (libcurl's pieces are 16 KiB at most), but kept whole if it comes.
            client.handler(handler, didLoad: Data(bytes: bytes, count: count))
            bytesToCome = bytesToCome.map { $0 - Int64(count) }
            return count
        }
        let buffer = batch ?? buffers.take()
        batch = buffer
        (buffer + batchCount).copyMemory(from: bytes, byteCount: count)
        batchCount += count
        if let left = bytesToCome {
            bytesToCome = left - Int64(count)
            if left <= Int64(count) {
                // The last bytes: the reader has the whole body now, the load's end still waiting for the server's 226.
                // Once: more than the size said (a file that grew) goes in batches as before.
                bytesToCome = nil
                handOverCheckingRoom()
            }
        }
        return count
    }

    /// Hands the gathered bytes to the reader; returns whether there were any.
    ///
    /// A batch of an eighth of the buffer or more goes in the buffer itself; a smaller one (a listing, a
    /// slow server's trickle) is copied, so that a few bytes never hold 512 KiB, and the buffer is kept.
    @discardableResult
    private func handOverPending() -> Bool {
        guard let buffer = batch, batchCount > 0 else { return false }
        guard !stopped.load(ordering: .acquiring) else {
            batchCount = 0
            return false
        }
        let data: Data
        if batchCount >= Self.largestBatch / 8 {
            data = buffers.data(in: buffer, count: batchCount)
            batch = nil
        } else {
            data = Data(bytes: buffer, count: batchCount)
        }
        batchCount = 0
        client.handler(handler, didLoad: data)
        return true
    }

    /// How many bytes the batch being gathered holds.
    var pendingBytes: Int { batchCount }

    /// Hands the gathered bytes over once the engine has read what was waiting (see `CurlEngine.run`).
    func deliverBatch() {
        isNoted = false
        handOverCheckingRoom()
    }

    /// Hands the gathered bytes to the reader, then stops receiving if the reader has no room left.
    private func handOverCheckingRoom() {
        guard !hasEnded, handOverPending() else { return }
        hasRoom.store(false, ordering: .sequentiallyConsistent)
        client.handler(handler, whenReadyForData: { [weak self] in self?.roomAvailable() })
        if !hasRoom.load(ordering: .sequentiallyConsistent) {
            // The reader is behind: stop receiving until it catches up. Pausing with curl_easy_pause, rather
            // than refusing a piece with CURL_WRITEFUNC_PAUSE, keeps libcurl from holding the piece itself;
            // transfers paused that way stalled other transfers of the multi handle here (libcurl 7.88).
            paused.store(true, ordering: .sequentiallyConsistent)
            ccurl_easy_pause(easy, 1)  // CURLPAUSE_RECV
            // Room may have come meanwhile, too early to see `paused`: then go on at once.
            if hasRoom.load(ordering: .sequentiallyConsistent), paused.exchange(false, ordering: .sequentiallyConsistent) {
                ccurl_easy_pause(easy, 0)  // CURLPAUSE_CONT
            }
        }
    }

    private func roomAvailable() {
        hasRoom.store(true, ordering: .sequentiallyConsistent)
        if !stopped.load(ordering: .acquiring), paused.exchange(false, ordering: .sequentiallyConsistent) { engine.submit(.resume(self)) }
    }

    fileprivate func readBody(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        guard let upload else { return 0 }
        switch upload.take(into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity)) {
        case .copied(let count): return count
        case .wait:
            uploadWaiting = true
            return Int(CURL_READFUNC_PAUSE)
        case .end: return 0
        case .failed: return Int(CURL_READFUNC_ABORT)
        }
    }

    /// One reply line of the server's. The last reply is kept if it refused (4xx, 5xx; at most 200 bytes of it)
    /// and forgotten when a later one did not: libcurl recovers from some refusals (a 500 to EPSV, then PASV; a
    /// 550 to MDTM), which must not be blamed for a later failure. Lines that do not begin with a code (the
    /// inside of a multi-line reply) change nothing, nor does the 221 that answers the QUIT libcurl sends as
    /// it closes the connection, after the failure.
    fileprivate func serverReply(_ line: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        let bytes = UnsafeRawBufferPointer(start: line, count: min(count, 200))
        guard bytes.count >= 3, bytes.prefix(3).allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              !bytes.starts(with: "221".utf8) else { return count }
        lastReplyCode = bytes.prefix(3).reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        if bytes[0] == UInt8(ascii: "4") || bytes[0] == UInt8(ascii: "5") {
            lastRefusal = String(String(decoding: bytes, as: UTF8.self).trimming(while: { $0.isNewline || $0 == " " }))
        } else {
            lastRefusal = nil
        }
        return count
    }

    fileprivate func debug(_ type: curl_infotype, _ data: UnsafeMutablePointer<CChar>?, count: Int) {
        // Once reported, the rest goes nowhere (libcurl's verbose mode stays on for the handle).
        guard let data, dialogue != nil else { return }
        dialogue?.note(type, UnsafeRawBufferPointer(start: data, count: count))
    }

    /// Reports the talk with the server so far as the load's one transaction, with the connection's addresses: before
    /// the response, as the contract has it (its replies after that, such as `226`, are not told), or as a transfer that
    /// failed before one ends (the handle still open: the addresses are read from it). Once only.
    private func reportDialogue() {
        guard let dialogue else { return }
        self.dialogue = nil
        // No server reached (a refused connect, a name not found): no exchange to tell of.
        guard !dialogue.isEmpty else { return }
        var transaction = LoadTransactionMetrics(request: handler.request, fetchStartDate: fetchStart)
        transaction.networkProtocolName = url.scheme?.lowercased()
        transaction.isReusedConnection = dialogue.reusedConnection
        transaction.dialogue = dialogue.all
        (transaction.remoteAddress, transaction.remotePort) = address(CURLINFO_PRIMARY_IP, CURLINFO_PRIMARY_PORT)
        (transaction.localAddress, transaction.localPort) = address(CURLINFO_LOCAL_IP, CURLINFO_LOCAL_PORT)
        client.handler(handler, didCollect: transaction)
    }

    /// An address and port of the last connection, as libcurl knows them; `nil` for what it does not.
    private func address(_ ipInfo: CURLINFO, _ portInfo: CURLINFO) -> (String?, Int?) {
        var text: UnsafePointer<CChar>?
        var port = 0
        let ip = ccurl_getinfo_string(easy, ipInfo, &text) == CURLE_OK ? text.map { String(cString: $0) } : nil
        let known = ccurl_getinfo_long(easy, portInfo, &port) == CURLE_OK && port > 0
        return (ip?.isEmpty == false ? ip : nil, known ? port : nil)
    }

    fileprivate func uploadProgress(sent: Int64, expected: Int64) {
        guard sent != lastReportedUpload else { return }
        lastReportedUpload = sent
        client.handler(handler, didSendBodyData: sent, totalBytesExpectedToSend: upload?.knownLength ?? (expected > 0 ? expected : nil))
    }
}

private func transfer(_ context: UnsafeMutableRawPointer?) -> CurlTransfer {
    Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
}

private let curlWrite: ccurl_data_callback = { buffer, size, count, context in
    transfer(context).received(buffer!, count: size * count)
}

private let curlHeader: ccurl_data_callback = { buffer, size, count, context in
    transfer(context).serverReply(buffer!, count: size * count)
}

private let curlRead: ccurl_data_callback = { buffer, size, count, context in
    transfer(context).readBody(into: buffer!, capacity: size * count)
}

private let curlDebug: ccurl_debug_callback = { _, type, data, size, context in
    transfer(context).debug(type, data, count: size)
    return 0
}

private let curlProgress: ccurl_progress_callback = { context, _, _, uploadTotal, uploaded in
    transfer(context).uploadProgress(sent: Int64(uploaded), expected: Int64(uploadTotal))
    return 0
}
