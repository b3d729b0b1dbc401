import FoundationEssentials
import Loader
import Synchronization

/// The session's delegate: answers challenges as `--digest` and `--anyauth` let it (``UserCredentials``) and, with
/// `-v`, tells each exchange with a server on standard error as curl's `-v` does: the connection, the request as it
/// went out (`> ` lines, with what the session's layers added), the response head (`< ` lines); and keeps each task's
/// exchanges for `-w`'s variables that tell of them, until ``transactions(of:)`` takes them.
final class SessionEvents: LoaderSessionDelegate {
    private let credentials: UserCredentials?
    private let verbose: Bool
    /// Each task's exchanges so far, by task identifier; `nil` when `-w` does not ask about them.
    private let kept: Mutex<[Int: [LoadTransactionMetrics]]>?

    /// `nil` when there is nothing to do: a session with a delegate collects metrics and calls it on every event.
    init?(credentials: UserCredentials?, verbose: Bool, keepsTransactions: Bool) {
        guard credentials != nil || verbose || keepsTransactions else { return nil }
        self.credentials = credentials
        self.verbose = verbose
        self.kept = keepsTransactions ? Mutex([:]) : nil
    }

    /// Takes `task`'s exchanges so far (all of them once its response has come).
    func transactions(of task: LoadTask) -> [LoadTransactionMetrics] {
        kept?.withLock { $0.removeValue(forKey: task.taskIdentifier) } ?? []
    }

    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        guard let credentials else { return .performDefaultHandling }
        return await credentials.loadTask(task, didReceive: challenge)
    }

    func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics) {
        kept?.withLock { $0[task.taskIdentifier, default: []].append(transaction) }
        if verbose { StandardStreams.error(Self.lines(for: transaction)) }
    }

    /// What `-v` prints for `transaction`.
    static func lines(for transaction: LoadTransactionMetrics) -> String {
        let request = transaction.request
        let host = request.url.host(percentEncoded: false) ?? ""
        let address = transaction.remoteAddress.map { " (\($0))" } ?? ""
        let port = transaction.remotePort.map { " port \($0)" } ?? ""
        var text = transaction.isReusedConnection ? "* Re-using a connection to \(host)\(address)\(port)\n"
                                                  : "* Connected to \(host)\(address)\(port)\n"
        let version = transaction.networkProtocolName == "h2" ? "HTTP/2" : "HTTP/1.1"
        if transaction.networkProtocolName == "h2", !transaction.isReusedConnection { text += "* Using HTTP/2\n" }
        var target = request.url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = request.url.query(percentEncoded: true) { target += "?" + query }
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
