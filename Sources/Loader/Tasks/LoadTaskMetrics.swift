import FoundationEssentials

/// What one request and its response took: the request as it went out, the connection it went on, and when
/// each step happened — URLSessionTaskTransactionMetrics' counterpart.
///
/// A handler reports one per exchange with the server (``SchemeHandlerClient/handler(_:didCollect:)``), as the
/// response head arrives; a redirect or an answered challenge makes another. Handlers that talk to no server
/// (`data:`, `file:`) report none. Dates of steps that did not happen (no new connection) are `nil`.
public struct LoadTransactionMetrics: Sendable {
    /// The request as it went out: with what the session's layers and the handler added (`Host`, cookies,
    /// `Authorization`, `Accept-Encoding`).
    public var request: LoadRequest
    /// The request line's target as it went out: the path and query, or the whole URL to an HTTP proxy; `nil` where
    /// the handler's protocol has no such line.
    public var requestTarget: String?
    /// The response head, as the handler reported it.
    public var response: LoadResponse?
    /// For a protocol that talks in lines (FTP): each command as it went out, after `> `, and each line of the
    /// server's replies, after `< `, in order (an FTP password as `****`, a long line cut). For HTTP, whose request and
    /// response are above, the `CONNECT` request (its `Proxy-Authorization` as sent, as ``request``'s `Authorization`
    /// is) and the proxy's answer that opened this exchange's new connection through an HTTP proxy's tunnel, marked
    /// alike; else empty.
    public var dialogue: [String] = []
    /// The protocol spoken, as ALPN names it: `"http/1.1"`, `"h2"`.
    public var networkProtocolName: String?
    /// Whether the request went on a connection an earlier one had opened.
    public var isReusedConnection: Bool
    /// Whether the connection went to a proxy (then ``remoteAddress`` is the proxy's).
    public var isProxyConnection: Bool
    /// The address the connection went to (a proxy's, through one), as text: `"127.0.0.1"`, `"::1"`, or a Unix socket's
    /// path (then ``remotePort`` is `nil`).
    public var remoteAddress: String?
    /// The port the connection went to.
    public var remotePort: Int?
    /// This end's address of the connection, as text.
    public var localAddress: String?
    /// This end's port of the connection.
    public var localPort: Int?
    /// When the handler began on this request.
    public var fetchStartDate: Date
    /// When opening a new connection began; `nil` on a reused one.
    public var connectStartDate: Date?
    /// When the new connection was ready for the request (after TLS, and a proxy's tunnel).
    public var connectEndDate: Date?
    /// When the TLS handshake of the new connection began (after a proxy's tunnel opened); `nil` without one.
    public var secureConnectionStartDate: Date?
    /// When the TLS handshake of the new connection ended; `nil` without one.
    public var secureConnectionEndDate: Date?
    /// The TLS version the connection's handshake with the server settled on (a proxy's own TLS aside), on a new
    /// connection and a reused one alike; `nil` without TLS, or where the handler cannot tell.
    public var negotiatedTLSProtocolVersion: TLSProtocolVersion?
    /// When the request began to go out.
    public var requestStartDate: Date?
    /// When the response's head arrived.
    public var responseStartDate: Date?
    /// When the response's body had all arrived (or the exchange failed); set by the loader as the handler ends, so
    /// usually `nil` in the copy ``LoadTaskDelegate/loadTask(_:didCollect:)`` gets.
    public var responseEndDate: Date?
    /// The response body's bytes as the handler delivered them: after the protocol's own framing (HTTP's chunks) is
    /// taken off, before the session's content decoding (a gzip body's compressed bytes), as URLSession's count of the
    /// same name. Set by the loader as the handler ends, so usually 0 in the copy
    /// ``LoadTaskDelegate/loadTask(_:didCollect:)`` gets; complete in ``LoadTaskMetrics``.
    public var countOfResponseBodyBytesReceived: Int64 = 0

    /// Makes a transaction's metrics; a handler fills in what it knows.
    /// - Parameters:
    ///   - request: The request as it went out.
    ///   - fetchStartDate: When the handler began on it.
    public init(request: LoadRequest, fetchStartDate: Date) {
        self.request = request
        self.fetchStartDate = fetchStartDate
        self.isReusedConnection = false
        self.isProxyConnection = false
    }
}

/// What a task's load took: each exchange with a server, in order, and the whole — URLSessionTaskMetrics'
/// counterpart, given to ``LoadTaskDelegate/loadTask(_:didFinishCollecting:)`` before the task completes.
///
/// Collected only for a task with a delegate (its own or the session's): a load nobody asks about pays nothing.
public struct LoadTaskMetrics: Sendable {
    /// Each exchange with a server, in order: a redirect's hops, a challenge and its answer.
    public var transactions: [LoadTransactionMetrics]
    /// From the task's start to its completion.
    public var taskInterval: DateInterval
    /// How many redirects the task followed.
    public var redirectCount: Int

    /// Makes a task's metrics.
    public init(transactions: [LoadTransactionMetrics], taskInterval: DateInterval, redirectCount: Int) {
        self.transactions = transactions
        self.taskInterval = taskInterval
        self.redirectCount = redirectCount
    }
}
