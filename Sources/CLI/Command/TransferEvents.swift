import FoundationEssentials
import HTTPTypes
import Loader
import Synchronization

/// A transfer's task delegate, made only when the command line asks about exchanges: with `-v` it tells each exchange
/// with a server on standard error as curl's `-v` does (the connection, the request as it went out with what the
/// session's layers added as `> ` lines, the response head as `< ` lines); with `-D` it writes each response head to
/// its file; for `-w`'s variables about connections it keeps them (``transactions``); with `-e ';auto'` it sends
/// each redirect's request with the URL it was redirected from as its `Referer`.
final class TransferEvents: LoadTaskDelegate {
    private let verbose: Bool
    private let headerDump: HeaderDump?
    /// The exchanges of the current try; `nil` when `-w` does not ask about them.
    private let kept: Mutex<[LoadTransactionMetrics]>?
    /// Why a head could not be written to `-D`'s file, if one could not: the transfer fails with 23, as curl's does.
    private let dumpFailure = Mutex<(any Error)?>(nil)
    /// Redirects followed in the current try.
    private let redirects = Mutex(0)
    /// Request body bytes sent in the current try's last hop.
    private let sent = Mutex<Int64>(0)
    /// Whether each redirect sends the URL it comes from as its `Referer`.
    private let autoReferer: Bool
    /// The `.netrc` login a redirect to a URL sends, if any (``LoadURL/netrcAuthorization(options:)``).
    private let netrcAuthorization: (@Sendable (URL) -> String?)?
    /// Whether a redirect to another origin keeps the request's `Authorization` (`--location-trusted`).
    private let trustsRedirects: Bool
    /// The `Authorization` the transfer's request carried, which `--location-trusted` sends after each redirect.
    private let trusted = Mutex<String?>(nil)
    /// The redirect statuses after which a `POST` stays a `POST` with its body (`--post301`, `--post302`, `--post303`).
    private let keepsPOST: Set<Int>
    /// `-X`'s method, which every redirect's request goes with, as curl's does.
    private let method: HTTPRequest.Method?
    /// Why a redirect's URL may not be loaded (its proxy variable is one this tool cannot use), if so.
    private let refusesRedirect: (@Sendable (URL) -> LoadError?)?
    /// The refusal that cancelled the task at a redirect, which the transfer reports in place of the cancel.
    private let refusal = Mutex<LoadError?>(nil)

    /// `nil` when none of `-v`, `-D`, `-w`'s variables about connections, `-e ';auto'`, `--location-trusted`,
    /// `--post30x` and `-X` is asked for: a task with a delegate collects metrics and calls it on every event.
    init?(verbose: Bool, keepsTransactions: Bool, headerDump: HeaderDump?, autoReferer: Bool = false,
          netrcAuthorization: (@Sendable (URL) -> String?)? = nil, trustsRedirects: Bool = false, keepingPOSTAfter keepsPOST: Set<Int> = [],
          method: HTTPRequest.Method? = nil, refusesRedirect: (@Sendable (URL) -> LoadError?)? = nil) {
        guard verbose || keepsTransactions || headerDump != nil || autoReferer || netrcAuthorization != nil || trustsRedirects
            || !keepsPOST.isEmpty || method != nil || refusesRedirect != nil else { return nil }
        self.method = method
        self.refusesRedirect = refusesRedirect
        self.verbose = verbose
        self.keepsPOST = keepsPOST
        self.trustsRedirects = trustsRedirects
        self.autoReferer = autoReferer
        self.netrcAuthorization = netrcAuthorization
        self.headerDump = headerDump
        self.kept = keepsTransactions ? Mutex([]) : nil
    }

    /// The exchanges kept since the transfer's try began.
    var transactions: [LoadTransactionMetrics] { kept?.withLock { $0 } ?? [] }

    /// The refusal of a redirect that ended the transfer, if one did.
    var redirectRefusal: LoadError? { refusal.withLock { $0 } }

    /// Why a head could not be written to `-D`'s file, if one could not.
    var headerDumpFailure: (any Error)? { dumpFailure.withLock { $0 } }

    /// Redirects followed in the current try, for `%{num_redirects}`.
    var redirectCount: Int { redirects.withLock { $0 } }

    /// Request body bytes sent in the current try's last hop, for `%{size_upload}`.
    var bytesSent: Int64 { sent.withLock { $0 } }

    /// Notes the `Authorization` of the request about to be sent, for `--location-trusted`'s redirects.
    func sending(_ request: LoadRequest) {
        if trustsRedirects { trusted.withLock { $0 = request.headerFields[.authorization] } }
    }

    /// Forgets the exchanges of a try that is made again (`--retry`): `-w` tells of the last.
    func startTry() {
        kept?.withLock { $0.removeAll() }
        redirects.withLock { $0 = 0 }
        sent.withLock { $0 = 0 }
    }

    /// Counts the redirect, and follows it (the session's rules, -L and --max-redirs, decided it may be), with the
    /// URL it comes from as the `Referer` under `-e ';auto'`.
    func loadTask(_ task: LoadTask, willPerformRedirection response: LoadResponse, newRequest request: LoadRequest) async -> LoadRequest? {
        if var refused = refusesRedirect?(request.url) {
            // Not followed, and not taken as the answer either: the transfer fails with the refusal, which keeps the
            // redirect's response for -w (curl's %{http_code} is its status).
            if refused.underlying == nil { refused.underlying = UnfollowedRedirect(response: response) }
            refusal.withLock { $0 = refused }
            task.cancel()
            return nil
        }
        redirects.withLock { $0 += 1 }
        // %{size_upload} is the last request's, as curl's: a body sent again after a 307 counts once.
        sent.withLock { $0 = 0 }
        var request = request
        if autoReferer { request.headerFields[.referer] = Self.referer(response.url) }
        // The session dropped the last host's Authorization when the origin changed; the new host's own, if any.
        if let netrcAuthorization, request.headerFields[.authorization] == nil, let value = netrcAuthorization(request.url) {
            request.headerFields[.authorization] = value
        }
        // --location-trusted: the first request's, to whichever host (the session dropped it for another origin).
        if trustsRedirects, request.headerFields[.authorization] == nil, ["http", "https", "ws", "wss"].contains(request.scheme),
           let value = trusted.withLock({ $0 }) {
            request.headerFields[.authorization] = value
        }
        // --post30x: the session made the POST a GET; it goes on as the POST it was (the task's current request, the
        // hop redirected), body and type with it.
        if let code = response.status?.code, keepsPOST.contains(code), request.method == .get {
            let previous = task.currentRequest
            if previous.method == .post {
                request.method = .post
                request.body = previous.body
                request.headerFields[.contentType] = previous.headerFields[.contentType]
            }
        }
        // -X: the method as given, whatever the status made of it; the body is what the session kept (none once it made
        // the request a GET), as curl 7.88 sends `-X POST -d …` after a 302 as a POST without its body.
        if let method, request.scheme == "http" || request.scheme == "https" { request.method = method }
        return request
    }

    /// `url` as a `Referer`: without user, password and fragment, as curl's `;auto` sends it; `nil` (none sent) for
    /// a URL that cannot be taken apart to leave them out.
    static func referer(_ url: URL) -> String? {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        (parts.user, parts.password, parts.fragment) = (nil, nil, nil)
        return parts.url?.absoluteString
    }

    func loadTask(_ task: LoadTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        sent.withLock { $0 += bytesSent }
    }

    func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics) {
        kept?.withLock { $0.append(transaction) }
        if verbose { StandardStreams.error(lines(for: transaction)) }
        if let headerDump, let response = transaction.response, let failure = headerDump.write(response.printableHead) {
            dumpFailure.withLock { $0 = $0 ?? failure }
        }
    }

    /// The exchanges as they ended, in place of the copies their heads brought: their body counts are known now.
    func loadTask(_ task: LoadTask, didFinishCollecting metrics: LoadTaskMetrics) {
        kept?.withLock { $0 = metrics.transactions }
    }

    /// What `-v` prints for `transaction`.
    func lines(for transaction: LoadTransactionMetrics) -> String {
        let request = transaction.request
        // Through a proxy, the connection is the proxy's, named by its address.
        let host = transaction.isProxyConnection ? transaction.remoteAddress ?? "" : request.url.host(percentEncoded: false) ?? ""
        let address = transaction.remoteAddress.map { " (\($0))" } ?? ""
        let port = transaction.remotePort.map { " port \($0)" } ?? ""
        var text = transaction.isReusedConnection ? "* Re-using existing connection with host \(host)\(address)\(port)\n"
                                                  : "* Connected to \(host)\(address)\(port)\n"
        // A protocol that talks in lines (FTP): its commands and replies as they went.
        if let name = transaction.networkProtocolName, name == "ftp" || name == "ftps" {
            return text + transaction.dialogue.map { $0 + "\n" }.joined()
        }
        // The proxy's tunnel, as it opened (curl tells its CONNECT alike).
        text += transaction.dialogue.map { $0 + "\n" }.joined()
        let version = transaction.networkProtocolName == "h2" ? "HTTP/2" : "HTTP/1.1"
        if let tls = transaction.negotiatedTLSProtocolVersion, !transaction.isReusedConnection { text += "* SSL connection using \(tls)\n" }
        if transaction.networkProtocolName == "h2", !transaction.isReusedConnection { text += "* Using HTTP/2\n" }
        // As the handler wrote it (the whole URL to an HTTP proxy); a handler of another protocol may give none.
        let target = transaction.requestTarget ?? request.url.path(percentEncoded: true)
        text += "> \(request.method.rawValue) \(target) \(version)\n"
        for field in request.headerFields { text += "> \(field.name.rawName): \(field.value)\n" }
        text += ">\n"
        if let response = transaction.response {
            // The head as -i prints it, each line marked.
            for line in response.printableHead.split(separator: "\r\n", omittingEmptySubsequences: false).dropLast() {
                text += line.isEmpty ? "<\n" : "< \(line)\n"
            }
        }
        return text
    }
}
