import FoundationEssentials
import Loader

/// A WebSocket (RFC 6455) to a `ws:` or `wss:` URL, as URLSession's web socket task: messages sent and received
/// in order, pings, and a close with a code and a reason.
///
/// ```swift
/// let socket = session.webSocketTask(with: URL(string: "wss://example.com/chat")!)
/// socket.resume()
/// try await socket.send(.string("hello"))
/// let reply = try await socket.receive()
/// socket.cancel(with: .normalClosure, reason: nil)
/// ```
///
/// The handshake carries the session's header fields and cookie store's cookies and goes through its proxy
/// (always in a tunnel) with its TLS settings (``HTTPClientOptions``); the server's certificate is put to the
/// session delegate's `session(_:didReceive:)` (a WebSocket task is no ``LoadTask``), and so is a `401`'s `Basic` or
/// `Digest` challenge before default handling (the URL's user info, the credential store); redirects are followed up
/// to the session's redirect limit, asking no delegate. From ``resume()`` until its
/// connection closes it counts among the session's running work: `invalidateAndCancel()` closes it with
/// ``CloseCode/goingAway``, and a session invalidated before it opens refuses it (`cancelled`). `send` and `receive` open the
/// socket if ``resume()`` has not. A message larger than ``maximumMessageSize`` ends the connection (close code
/// 1009) and fails `receive` with `dataLengthExceedsMaximum`. Reading stops while 16 messages wait unread, so a
/// reader that falls behind slows the server. The handshake's answer, and a server's reading of what this end sends,
/// are bounded by the request timeout (the request's `timeoutInterval`, else the session's `timeoutIntervalForRequest`):
/// past it the opening or the socket fails with `timedOut`. Every failure is a `LoadError` naming the URL; once the server
/// or the connection has ended the socket, `receive` returns the messages that arrived before and then throws (after this
/// end's ``cancel(with:reason:)`` it throws at once), and ``closeCode`` and ``closeReason`` tell how it closed.
public final class WebSocketTask: Sendable {
    /// The request the socket was made with.
    public let originalRequest: LoadRequest
    private let session: LoaderSession

    private struct State {
        var maximumMessageSize = 1 << 20
        var offersCompression = true
        var opening: Task<WebSocketConnection, any Error>?
        var response: LoadResponse?
        var connection: WebSocketConnection?
        var cancelled: (code: CloseCode, reason: Data?)?
        /// Ends the wait for the session delegate's answer about the server's certificate, while one is awaited.
        var endDelegateWait: (@Sendable () -> Void)?
        /// The calls waiting for the socket to open, by number: a cancel fails them at once, whatever the opening is
        /// waiting for (a connect or a handshake no cancel reaches).
        var openWaiters: [Int: CheckedContinuation<WebSocketConnection, any Error>] = [:]
        var nextOpenWaiter = 0
        var delegate: (any WebSocketTaskDelegate)?
    }
    private let state = Locked(State())
    /// Why the socket cannot open, known when the task was made (a subprotocol that is no token): its opening fails so.
    private let refusal: LoadError?

    init(request: LoadRequest, session: LoaderSession, refusal: LoadError? = nil) {
        originalRequest = request
        self.session = session
        self.refusal = refusal
    }

    deinit {
        // A socket nobody holds any more says goodbye (1001, going away, as a browser leaving the page does) and closes
        // once the server answers, or after five seconds, unless `cancel(with:reason:)` began its own close handshake.
        let (opening, connection, endDelegateWait, closing) = state.withLock { ($0.opening, $0.connection, $0.endDelegateWait, $0.cancelled != nil) }
        // Not left waiting for the delegate's word on the server's certificate, holding the connection open.
        opening?.cancel()
        endDelegateWait?()
        if !closing, let connection { Task { await connection.close(.goingAway, reason: nil) } }
    }

    /// Hears this socket open and close (``WebSocketTaskDelegate``), in place of the session's delegate if that adopts
    /// the protocol; set it before the socket opens. Held until the close has been told, as URLSession's task holds its
    /// delegate: one that holds the task keeps both (and the socket) until ``cancel(with:reason:)`` or the socket's end.
    public var delegate: (any WebSocketTaskDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// The largest message `receive` takes, in bytes (1 MiB unless set, at most 1 GiB); set it before the socket opens.
    public var maximumMessageSize: Int {
        get { state.withLock { $0.maximumMessageSize } }
        set { state.withLock { $0.maximumMessageSize = min(max(1, newValue), 1 << 30) } }
    }

    /// Whether the handshake offers per-message compression (`permessage-deflate`, RFC 7692), which the server may take
    /// or not: `true` unless set; set it before the socket opens. A request with a `Sec-WebSocket-Extensions` field of
    /// its own offers that instead, and only `permessage-deflate` without `client_max_window_bits` can be spoken: a
    /// server that takes anything else, or any extension when none was offered, fails the opening. A compressed
    /// message counts against ``maximumMessageSize`` as it inflates.
    public var offersCompression: Bool {
        get { state.withLock { $0.offersCompression } }
        set { state.withLock { $0.offersCompression = newValue } }
    }

    /// The server's `101 Switching Protocols` answer, once the socket is open.
    public var response: LoadResponse? { state.withLock { $0.response } }

    /// The subprotocol the server took among those the handshake offered, once the socket is open; `nil` for none.
    /// A server that takes one not offered fails the handshake (RFC 6455 §4.1).
    public var selectedProtocol: String? { response?.headerFields[.secWebSocketProtocol] }

    /// The code of the close frame that ended the socket: the server's (``CloseCode/noStatusReceived`` if its
    /// frame had none), the one ``cancel(with:reason:)`` sent, or the one this end sent for a fault of the
    /// server's (1002, 1007, 1009); ``CloseCode/abnormalClosure`` when it ended without a close frame (or a ping
    /// went unanswered); `nil` while it is open.
    public var closeCode: CloseCode? {
        guard let connection = state.withLock({ $0.connection }) else { return state.withLock { $0.cancelled?.code } }
        return connection.closeInfo.code
    }

    /// The reason that came with ``closeCode``, if any.
    public var closeReason: Data? {
        guard let connection = state.withLock({ $0.connection }) else { return state.withLock { $0.cancelled?.reason } }
        return connection.closeInfo.reason
    }

    /// Starts the handshake. Calling it again does nothing.
    public func resume() {
        _ = opening()
    }

    /// Sends `message` as one frame; returns when it is written to the connection. A server that reads nothing of
    /// what this end sends for the request timeout (the request's `timeoutInterval`, else the session's
    /// `timeoutIntervalForRequest`) ends the socket: the call fails with `timedOut` and ``closeCode`` reads
    /// ``CloseCode/abnormalClosure``. Cancelling the calling task ends the wait with `cancelled`; the message still
    /// goes out whole (a frame cut short would break the connection), and the socket stays open. A task cancelled
    /// before the call sends nothing.
    public func send(_ message: Message) async throws {
        try await connection().send(message)
    }

    /// The next message, waiting for one.
    public func receive() async throws -> Message {
        try await connection().receive()
    }

    /// Sends a ping and returns when the server's pong comes back. A server that sends nothing for the request timeout
    /// (60 s at most) after the ping went out is taken for gone: the connection closes (``CloseCode/abnormalClosure``)
    /// and the ping, with every waiting call, fails with `timedOut`.
    public func sendPing() async throws {
        try await connection().ping()
    }

    /// Closes the socket: calls waiting on it fail with `cancelled` at once, and ``closeCode`` is `code`; a close
    /// frame with `code` and `reason` goes out, and the connection closes when the server has answered, or after five
    /// seconds, whether or not the task is still held. The reason is cut to 123 bytes where a character begins, and
    /// left out if it is not UTF-8; a code no close frame may carry (``CloseCode/noStatusReceived``,
    /// ``CloseCode/abnormalClosure``, 1015, or one outside 1000–4999 that RFC 6455 does not define) goes as a close
    /// frame without a code. Before the socket is open, the handshake is abandoned.
    public func cancel(with code: CloseCode = .normalClosure, reason: Data? = nil) {
        let (opening, connection, endDelegateWait, openWaiters) = state.withLock { state in
            if state.cancelled == nil { state.cancelled = (code, reason) }
            defer { state.endDelegateWait = nil; state.openWaiters = [:] }
            return (state.opening, state.connection, state.endDelegateWait, Array(state.openWaiters.values))
        }
        // The opening first: a delegate's wait ended by the cancel then reads as the socket's cancel (`cancelled`), not
        // as the delegate's refusal.
        opening?.cancel()
        endDelegateWait?()
        let closed = LoadError(.cancelled, url: originalRequest.url, reason: "the WebSocket was closed by this end with \(code)")
        for waiter in openWaiters { waiter.resume(throwing: closed) }
        // Waiting calls fail now, and the code reads back at once; the close handshake follows.
        connection?.ended(LoadError(.cancelled, url: originalRequest.url, reason: "the WebSocket was closed by this end with \(code)"), code: code, reason: reason)
        guard let opening else { return }
        Task { if let connection = try? await opening.value { await connection.close(code, reason: reason) } }
    }

    // MARK: Opening

    private func opening() -> Task<WebSocketConnection, any Error> {
        state.withLock { state in
            if let opening = state.opening { return opening }
            let request = originalRequest, session = session, size = state.maximumMessageSize, compression = state.offersCompression, refusal = refusal, shared = self.state
            let cancelled = state.cancelled != nil
            let ask = delegateQuestion()
            let opening = Task<WebSocketConnection, any Error> { [weak self] in
                if let refusal { throw refusal }
                if cancelled { throw LoadError(.cancelled, url: request.url, reason: "the WebSocket was cancelled before it opened") }
                // One of the session's running tasks from here until its connection closes: invalidateAndCancel()
                // closes it (1001, going away), and the session is reported invalid after.
                guard let member = session.join(cancel: { [weak self] in self?.cancel(with: .goingAway) }) else {
                    throw LoadError(.cancelled, url: request.url, reason: "the session was invalidated before the WebSocket opened")
                }
                let connection: WebSocketConnection, response: LoadResponse
                do {
                    (connection, response) = try await WebSocketOpening.open(request, session: session, maximumMessageSize: size,
                                                                            offersCompression: compression, ask: ask)
                } catch {
                    session.leave(member)
                    // Cancelled while it opened: that is the outcome, whatever the opening then failed with (a delegate's
                    // wait ended by the cancel reads as a refused certificate, the pool's check running apart from this
                    // task). Decided here, once, so every caller sees it; a failure before any cancel stays itself.
                    if let code = shared.withLock({ $0.cancelled?.code }) {
                        throw LoadError(.cancelled, url: request.url, reason: "the WebSocket was closed by this end with \(code) as it opened")
                    }
                    throw error
                }
                connection.channel.closeFuture.whenComplete { _ in session.leave(member) }
                // A task let go while it opened leaves no socket behind.
                guard let self else {
                    // Said goodbye to (1001, going away), as a task let go once open is.
                    Task { await connection.close(.goingAway, reason: nil) }
                    throw LoadError(.cancelled, url: request.url, reason: "the WebSocket task was released while it opened")
                }
                let delegate = self.state.withLock { state -> (any WebSocketTaskDelegate)? in
                    state.response = response
                    state.connection = connection
                    return state.delegate ?? (session.delegate as? any WebSocketTaskDelegate)
                }
                if let delegate { self.tell(delegate, openedWith: response, on: connection) }
                return connection
            }
            state.opening = opening
            return opening
        }
    }

    /// Tells `delegate` that the socket opened, then, once, that it ended (from a task of its own: the end may come on
    /// the connection's event loop). The task is held weakly meanwhile: one let go closes, and is not told of.
    private func tell(_ delegate: any WebSocketTaskDelegate, openedWith response: LoadResponse, on connection: WebSocketConnection) {
        delegate.webSocketTask(self, didOpenWithProtocol: response.headerFields[.secWebSocketProtocol])
        connection.whenEnded { [weak self] code, reason in
            guard let self else { return }
            Task {
                delegate.webSocketTask(self, didCloseWith: code ?? .abnormalClosure, reason: reason)
                // Told: let go of it, as URLSession lets go of a task's delegate once the task completes.
                self.state.withLock { if $0.delegate === delegate { $0.delegate = nil } }
            }
        }
    }

    /// How the handshake puts the server's certificate, and a `401`'s challenge, to the session's delegate; `nil`
    /// without one. It holds the task's state, not the task: a task let go while the delegate thinks is closed
    /// (``deinit`` ends the wait).
    private func delegateQuestion() -> ConnectionPool.TrustQuestion? {
        guard let delegate = session.delegate else { return nil }
        let state = state, session = session
        return { challenge in await Self.answer(challenge, from: delegate, session: session, state: state) }
    }

    /// The session delegate's answer to the handshake's server-trust question; cancelling the socket ends the wait,
    /// as a cancelled challenge.
    private static func answer(_ challenge: AuthenticationChallenge, from delegate: any LoaderSessionDelegate, session: LoaderSession,
                               state: Locked<State>) async -> ChallengeDisposition {
        let answer = await DelegateAnswer.awaiting({ await delegate.session(session, didReceive: challenge) }) { end in
            state.withLock { state in
                if state.cancelled == nil { state.endDelegateWait = end }
                return state.cancelled != nil
            }
        }
        state.withLock { $0.endDelegateWait = nil }
        return answer ?? .cancelAuthenticationChallenge
    }

    /// The open connection, opening it first if need be. A call that waits for the opening ends at once when the
    /// socket is cancelled, or the calling task: the connect and the handshake heed no cancel before their timeouts.
    private func connection() async throws -> WebSocketConnection {
        let opening = opening()
        if let connection = state.withLock({ $0.connection }) { return connection }
        let url = originalRequest.url, shared = state
        let id = state.withLock { state in
            state.nextOpenWaiter += 1
            return state.nextOpenWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<WebSocketConnection, any Error>) in
                let refusal = shared.withLock { state -> LoadError? in
                    if let cancelled = state.cancelled {
                        return LoadError(.cancelled, url: url, reason: "the WebSocket was closed by this end with \(cancelled.code)")
                    }
                    if Task.isCancelled { return LoadError(.cancelled, url: url, reason: "the call was cancelled as the WebSocket opened") }
                    state.openWaiters[id] = waiter
                    return nil
                }
                if let refusal { return waiter.resume(throwing: refusal) }
                Task {
                    let result = await opening.result.mapError { LoadError.wrapping($0, url: url) as any Error }
                    shared.withLock { $0.openWaiters.removeValue(forKey: id) }?.resume(with: result)
                }
            }
        } onCancel: {
            shared.withLock { $0.openWaiters.removeValue(forKey: id) }?
                .resume(throwing: LoadError(.cancelled, url: url, reason: "the call was cancelled as the WebSocket opened"))
        }
    }
}

extension LoaderSession {
    /// A WebSocket to `url` (`ws:` or `wss:`); call ``WebSocketTask/resume()`` (or `send`, `receive`) to open it.
    public func webSocketTask(with url: URL) -> WebSocketTask {
        webSocketTask(with: LoadRequest(url: url))
    }

    /// A WebSocket to `url` (`ws:` or `wss:`) whose handshake offers the subprotocols `protocols`, most preferred
    /// first (`Sec-WebSocket-Protocol`); ``WebSocketTask/selectedProtocol`` tells which the server took, if any.
    /// A subprotocol that is not a token (a space or a comma in it would offer others), or one named twice, fails the
    /// socket's opening with ``LoadError/Code/badURL`` naming it (RFC 6455 §4.1).
    public func webSocketTask(with url: URL, protocols: [String]) -> WebSocketTask {
        var request = LoadRequest(url: url)
        if !protocols.isEmpty { request.headerFields[.secWebSocketProtocol] = protocols.joined(separator: ", ") }
        return WebSocketTask(request: request, session: self, refusal: WebSocketOpening.refusal(ofOffered: protocols, url: url))
    }

    /// A WebSocket for `request` (its URL `ws:` or `wss:`; its header fields go with the handshake, a
    /// `Sec-WebSocket-Protocol` among them for a subprotocol: a list of tokens, each once, empty items skipped, or the
    /// opening fails with ``LoadError/Code/badURL``).
    public func webSocketTask(with request: LoadRequest) -> WebSocketTask {
        WebSocketTask(request: request, session: self)
    }
}
