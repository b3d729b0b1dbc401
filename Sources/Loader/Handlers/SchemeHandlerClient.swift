import FoundationEssentials

/// Where a ``SchemeHandler`` reports what happened to its load — the counterpart of URLProtocolClient.
///
/// The contract (the conformance suite checks it):
/// 1. Exactly one response (``handler(_:didReceive:)`` or ``handler(_:wasRedirectedTo:redirectResponse:)``)
///    before any body byte.
/// 2. Body chunks append; they never replace earlier ones.
/// 3. Exactly one terminal event, ``handlerDidFinishLoading(_:)`` or ``handler(_:didFailWith:)``, and
///    nothing after it.
/// 4. A redirect is reported, never followed by the handler: the session's middleware decides.
///
/// ``handler(_:didReceive:body:finished:)`` is these events in one call: it is the one response (so it
/// cannot follow another), and with `finished` also the terminal event; without it, more chunks and the
/// end may follow.
///
/// Every method may be called from any thread; calls from one handler must not overlap (report events
/// in order from one task or queue at a time).
public protocol SchemeHandlerClient: AnyObject, Sendable {
    /// The response head. Send it once, before any body data.
    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse)

    /// The handler answers with a redirect: `response` is the redirecting response, `request` the
    /// request it proposes. Send it instead of ``handler(_:didReceive:)``, then finish (its body, if any,
    /// may follow). Whether the redirect is followed is the session's decision.
    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse)

    /// The response head with the body bytes that came with it and, when `finished`, the end of the load:
    /// the same events as ``handler(_:didReceive:)``, ``handler(_:didLoad:)`` with `body` and
    /// ``handlerDidFinishLoading(_:)``, but a waiting reader wakes once for all of them rather than once
    /// per event — for a handler that has a small response whole in hand (one read from a socket). An
    /// empty `body` is no chunk; like ``handler(_:didLoad:)`` it does not wait for room in the reader's
    /// buffer. A redirect has no such form: report it with ``handler(_:wasRedirectedTo:redirectResponse:)``.
    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: Data, finished: Bool)

    /// A chunk of the body, appended to what came before. Returns at once whatever the consumer's
    /// pace: use ``handler(_:deliver:)`` or ``handler(_:whenReadyForData:)`` to honour backpressure.
    func handler(_ handler: SchemeHandler, didLoad data: Data)

    /// A chunk of the body, appended; suspends while the consumer's buffer is full.
    /// - Throws: ``LoadError`` with code ``LoadError/Code/cancelled`` (or the load's failure) once the
    ///   load has ended, so that a producing loop stops.
    func handler(_ handler: SchemeHandler, deliver data: Data) async throws

    /// Calls `callback` once the consumer's buffer has room, at once if it has room now — for handlers
    /// driven by callbacks (libcurl's pause and unpause) rather than by `async` code.
    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void)

    /// Progress of the request body: `totalBytesSent` so far out of `totalBytesExpectedToSend` when known.
    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?)

    /// Asks the task's delegate, then the session's, a question only the app can answer — for an HTTPS
    /// handler, whether to trust the server (``AuthenticationChallenge/serverTrust``). A handler must go on
    /// handling other events while it waits.
    func handler(_ handler: SchemeHandler, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition

    /// Whether anyone reads this load's metrics (its task has a delegate). A handler that talks to a server reports
    /// ``handler(_:didCollect:)`` only then, so that a load nobody asks about pays nothing for them.
    var collectsMetrics: Bool { get }

    /// One exchange with the server, reported as its response head arrives, before ``handler(_:didReceive:)``
    /// (or the redirect): the request as it went out, the connection, the times so far. The loader notes the
    /// response's end itself.
    func handler(_ handler: SchemeHandler, didCollect transaction: LoadTransactionMetrics)

    /// The load completed; the body is whole.
    func handlerDidFinishLoading(_ handler: SchemeHandler)

    /// The load failed. Data already reported stays delivered before the error.
    func handler(_ handler: SchemeHandler, didFailWith error: LoadError)
}

extension SchemeHandlerClient {
    /// The events one by one: the response, the body if any, then the end if `finished`.
    public func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: Data, finished: Bool) {
        self.handler(handler, didReceive: response)
        if !body.isEmpty { self.handler(handler, didLoad: body) }
        if finished { handlerDidFinishLoading(handler) }
    }

    /// The events one by one, the chunks joined: the form this method had before it took one `Data`.
    @available(*, deprecated, message: "pass the body as one Data")
    public func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: [Data], finished: Bool) {
        self.handler(handler, didReceive: response, body: body.reduce(into: Data()) { $0.append($1) }, finished: finished)
    }

    /// Nobody reads metrics.
    public var collectsMetrics: Bool { false }

    /// Drops the transaction.
    public func handler(_ handler: SchemeHandler, didCollect transaction: LoadTransactionMetrics) {}

    /// Nobody to ask: ``ChallengeDisposition/performDefaultHandling``.
    public func handler(_ handler: SchemeHandler, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        .performDefaultHandling
    }
}
