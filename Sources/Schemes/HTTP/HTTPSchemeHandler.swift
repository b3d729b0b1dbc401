import FoundationEssentials
import HTTPTypes
import Loader
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The `http:` and `https:` handler: HTTP/1.1, and HTTP/2 over TLS, on SwiftNIO, with a keep-alive pool per origin, TLS,
/// streamed bodies in both directions, and backpressure from the reader to the socket.
///
/// Redirects, authentication and content decoding are the session's middleware, not this handler's: it
/// reports every response, 3xx and 401 included, as it arrives. Settings come from
/// ``HTTPClientOptions`` on the request or session.
///
/// An idempotent request that fails on a reused connection before any response byte (the server closed
/// it while idle) is retried once on a new connection; so is any request whose connection, new or reused, had
/// closed before a byte of it went out.
public final class HTTPSchemeHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: the fast path's state is behind a lock.

    /// A bodiless request runs without a task of its own when a connection is idle or the pool is full:
    /// started here or by the pool when a connection comes back, ended by the event loop. Kept so that
    /// `stopLoading()` can withdraw or abandon it.
    private let fastPath = Locked<FastPath>(.none)
    /// Set when the fast path's connection turned out closed (see ``HTTPRequestPlan/mayRetry(after:on:exchange:)``):
    /// the retry already happened.
    private let alreadyRetried = Atomic<Bool>(false)
    /// How many times the fast path's request went unprocessed (an HTTP/2 stream refused, or one that could not
    /// open): the task it starts counts them among its resends.
    private let alreadyRefused = Atomic<Int>(0)
    /// The error carrying a proxy's challenge that the fast path met, for the task it starts to ask about at once
    /// (not sending again first).
    private let fastPathProxyChallenge = Mutex<LoadError?>(nil)
    /// What the request becomes on the wire, or why it cannot be sent: worked out with the handler, and
    /// kept in it rather than in an object of its own (one allocation fewer per request).
    private let planned: Result<HTTPRequestPlan, LoadError>
    /// When the handler was made, for its transactions' metrics; `nil` when the load collects none.
    private let fetchStart: Date?

    private enum FastPath {
        case none
        /// Waiting in the pool's queue.
        case queued(ConnectionPool.Key, id: Int)
        /// Sent on a connection.
        case sending(HTTPConnection, HTTPExchange)
    }

    /// `http` and `https`.
    override public class var supportedSchemes: Set<String> { ["http", "https"] }

    /// Makes the handler for `request`, reporting to `client`; nothing is sent before ``startLoading()``.
    public required init(request: LoadRequest, cachedResponse: CachedResponse?, client: any SchemeHandlerClient) {
        do {
            planned = .success(try HTTPRequestPlan(request))
        } catch {
            planned = .failure(error)
        }
        fetchStart = client.collectsMetrics ? Date() : nil
        super.init(request: request, cachedResponse: cachedResponse, client: client)
    }

    /// Starts the load. A bodiless request takes an idle connection or a new stream on an HTTP/2 one, or
    /// waits in the pool's queue for either, without a task: the event loop sends it and ends it, with no
    /// thread hop. A request with a body, or one that must open a new connection, runs ``load()`` in a task.
    override public func startLoading() {
        guard request.body == nil, case .success(let plan) = planned else {
            startTask()
            return
        }
        takeConnection(for: plan)
    }

    /// Takes what the pool has for a bodiless request, or waits in its queue. Told to look again (a slot or a
    /// stream came free, an HTTP/2 connection opened), it comes back here, so that a new stream is taken
    /// without a task too.
    private func takeConnection(for plan: HTTPRequestPlan) {
        let pool = HTTPEngine.shared.pool
        // Under the lock, so that a delivery racing with this finds the queued state recorded.
        let outcome = fastPath.withLock { state -> ConnectionPool.QueueOutcome in
            let outcome = pool.leaseOrQueue(plan.key, deliver: { [self] lease in
                fastPath.withLock { $0 = .none }
                if let lease {
                    send(plan, on: lease)
                } else if isStopped {
                    // Stopped as a slot came free for it: the next waiter may have the slot.
                    pool.passOnSlot(plan.key)
                } else {
                    takeConnection(for: plan)
                }
            })
            if case .queued(let id) = outcome { state = .queued(plan.key, id: id) }
            return outcome
        }
        switch outcome {
        case .leased(let lease): send(plan, on: lease)
        case .stream(let connection): openStream(plan, on: connection)
        case .mayConnect: startTask()
        case .queued: if isStopped { stopLoading() }
        }
    }

    /// Opens a stream on an HTTP/2 connection, whose place the pool has counted for this request, and sends the
    /// request on it as it opens, on the event loop. A stream that cannot open sent nothing: the load goes on
    /// in a task, which looks for a connection again.
    private func openStream(_ plan: HTTPRequestPlan, on connection: HTTP2Connection) {
        connection.openStream(for: HTTPEngine.shared.pool, url: request.url) { [self] result in
            switch result {
            case .success(let stream): send(plan, on: ConnectionPool.Lease(connection: stream, reused: true))
            case .failure(let error):
                guard !isStopped else { return }
                if error.underlying is HTTP2StreamRefused { alreadyRefused.add(1, ordering: .releasing) }
                startTask()
            }
        }
    }

    /// Sends a bodiless request on `lease`; the event loop reports the response and the end.
    private func send(_ plan: HTTPRequestPlan, on lease: ConnectionPool.Lease) {
        let connection = lease.connection
        guard !isStopped else {
            HTTPEngine.shared.pool.release(connection, reusable: true)
            return
        }
        let exchange = HTTPExchange(url: request.url, isHead: plan.isHead, fastPath: self, lease: lease,
                                    metrics: metrics(of: plan, on: lease))
        if plan.answersProxyChallenges { exchange.markAnswersProxyChallenge() }
        fastPath.withLock { $0 = .sending(connection, exchange) }
        if isStopped {
            // Never sent, so never ended by the connection: the state lets go of it here.
            fastPath.withLock { $0 = .none }
            connection.abandon(exchange)
            return
        }
        connection.send(exchange, head: plan.head)
    }

    /// The end of a fast-path exchange sent on `lease`: nothing more to do after a response, a retry or
    /// the failure reported after an error.
    func exchange(_ exchange: HTTPExchange, endedWith result: Result<Void, any Error>, on lease: ConnectionPool.Lease) {
        // Dropped here: the exchange refers back to this handler.
        fastPath.withLock { $0 = .none }
        guard case .failure(let error) = result else { return }
        lease.connection.abandon(exchange)
        guard !isStopped else { return }
        let mapped = HTTPErrorMapping.map(error, url: request.url)
        guard case .success(let plan) = planned else {
            client.handler(self, didFailWith: mapped)
            return
        }
        if ProxyChallenge.carried(by: mapped) != nil {
            // The proxy wants credentials: a task asks the delegates, and sends it again.
            fastPathProxyChallenge.withLock { $0 = mapped }
            startTask()
        } else if plan.mayResend(after: mapped, exchange: exchange) {
            // An HTTP/2 server did not process it: again, in a task, which resends a few times at most (this one counted).
            alreadyRefused.add(1, ordering: .releasing)
            startTask()
        } else if plan.mayRetry(after: mapped, on: lease, exchange: exchange) {
            // Once more, in a task, on a new connection.
            alreadyRetried.store(true, ordering: .releasing)
            startTask()
        } else {
            client.handler(self, didFailWith: plan.explaining(mapped, on: lease, exchange: exchange))
        }
    }

    /// A bodiless load started from a task on one of the HTTP event loops (one that prefers
    /// ``EventLoopTaskExecutor``) keeps its own task there too. A body may be read from a file with
    /// blocking reads, so a load with one runs on Swift's global executor.
    override public var loadExecutor: (any TaskExecutor)? {
        guard request.body == nil, let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return nil }
        return HTTPEngine.shared.executor(for: loop)
    }

    /// The base class's way: ``load()`` in a task.
    private func startTask() {
        super.startLoading()
    }

    /// Stops the load: withdraws a queued request, abandons a sent one (closing its connection unless the
    /// response had ended), and cancels the task, if any.
    override public func stopLoading() {
        super.stopLoading()
        switch fastPath.withLock({ $0 }) {
        case .queued(let key, let id): _ = HTTPEngine.shared.pool.withdraw(key, id: id)
        case .sending(let connection, let exchange): connection.abandon(exchange)
        case .none: break
        }
    }

    /// Loads the request over a pooled connection, answering an HTTP proxy's `407` (to the request or to the
    /// `CONNECT` of a tunnel) by asking the task's and session's delegates, then the session's credential
    /// store, about the proxy's protection space (``ProtectionSpace/isProxy``), at most
    /// ``maximumProxyAttempts`` times. The credential given is kept for the session's later requests through that
    /// proxy (until the proxy refuses it). Unanswered, a tunnel's load fails with
    /// ``LoadError/Code/userAuthenticationRequired`` and a request sent through the proxy gets the proxy's 407
    /// response: it is sent once more for that (so a request through a proxy may go up to five times, its body
    /// too, which must be one that can be sent again; with any other body, or a `Proxy-Authorization` of the
    /// request's own, the first 407 is the response). Any 407 that comes back through a forward proxy is taken
    /// as the proxy's, as curl takes it.
    @concurrent override public func load() async throws {
        var plan = try planned.get()
        var asked = 0
        var refused = 0
        let credentials = HTTPEngine.shared.proxyCredentials
        let session = request.sessionIdentifier ?? 0
        while true {
            let error: LoadError
            do {
                if let met = fastPathProxyChallenge.withLock({ $0.take() }) { throw met }
                return try await load(plan)
            } catch let caught as LoadError {
                error = caught
            }
            guard let challenge = ProxyChallenge.carried(by: error), let proxy = plan.proxy else { throw error }
            let proposed = proxy.credential
            if let proposed {
                // Sent and refused: not to be sent unasked again.
                refused += 1
                credentials.forget(proposed, session: session, proxy: proxy)
            }
            var answer: Credential?
            if asked < Self.maximumProxyAttempts {
                asked += 1
                answer = try await self.answer(challenge, at: proxy, refused: refused, proposed: proposed)
            }
            if let answer {
                // Kept at once, before the proxy has taken it: the reader may hear the response's end before
                // this task does, and load again. A wrong one is forgotten at its first 407 (above).
                credentials.set(answer, session: session, proxy: proxy)
                plan = try HTTPRequestPlan(request, proxyCredential: answer)
            } else if plan.answersProxyChallenges {
                // Once more, for the proxy's 407 to reach the caller as the response (it was not sent on).
                plan = try HTTPRequestPlan(request, proxyCredential: proposed, answeringProxyChallenges: false)
            } else {
                throw error
            }
        }
    }

    /// The credential the delegates (or default handling) give for `challenge` at `proxy`; `nil` when none.
    /// Throws when they cancel the challenge or the load is cancelled.
    private func answer(_ challenge: ProxyChallenge, at proxy: HTTPClientOptions.Proxy, refused: Int, proposed: Credential?) async throws -> Credential? {
        let question = AuthenticationChallenge(protectionSpace: challenge.space(at: proxy), previousFailureCount: refused, proposedCredential: proposed)
        let disposition = await client.handler(self, didReceive: question)
        guard !Task.isCancelled else { throw LoadError(.cancelled, url: request.url) }
        return try challenge.credential(from: disposition, at: proxy, url: request.url)
    }

    /// How many times one load asks about a proxy's challenge.
    static let maximumProxyAttempts = 3

    /// Loads the request over a pooled connection, as `plan` says.
    private func load(_ plan: HTTPRequestPlan) async throws {
        let pool = HTTPEngine.shared.pool
        var retried = alreadyRetried.load(ordering: .acquiring)
        // Requests an HTTP/2 server did not process (GOAWAY, a refused stream) go again, a few times at most.
        var refusals = alreadyRefused.load(ordering: .acquiring)
        while true {
            let lease: ConnectionPool.Lease
            do {
                lease = try await pool.acquire(plan.key, url: request.url, fresh: retried) { [self] challenge in
                    await client.handler(self, didReceive: challenge)
                }
            } catch let error as LoadError where refusals < HTTPRequestPlan.maximumRefusals && plan.mayResend(after: error, exchange: nil) {
                // The HTTP/2 connection it was given closed before a stream could open: nothing was sent.
                guard !Task.isCancelled else { throw LoadError(.cancelled, url: request.url) }
                refusals += 1
                continue
            } catch let error as LoadError where !retried && error.underlying is RequestNotSent && !Task.isCancelled {
                // The new connection closed before it could carry the request: nothing was sent; once more.
                retried = true
                continue
            }
            let connection = lease.connection
            let done = connection.channel.eventLoop.makePromise(of: Void.self)
            let exchange = HTTPExchange(url: request.url, isHead: plan.isHead, handler: self,
                                        metrics: metrics(of: plan, on: lease)) { result in
                done.completeWith(result)
            }
            if plan.answersProxyChallenges { exchange.markAnswersProxyChallenge() }
            do {
                try await withTaskCancellationHandler {
                    try await connection.execute(exchange, head: plan.head, body: request.body, done: done.futureResult)
                } onCancel: {
                    connection.abandon(exchange)
                }
                return
            } catch {
                // The loop lets go of the exchange (ending it, and so `done`, if nothing else did) before this task
                // reports the failure: the two never report at once.
                if await connection.giveUp(exchange, failing: error), (try? await done.futureResult.get()) != nil {
                    // The response ended, and was reported whole, before the request failed on this side: it stands.
                    return
                }
                let mapped = HTTPErrorMapping.map(error, url: request.url)
                if refusals < HTTPRequestPlan.maximumRefusals, plan.mayResend(after: mapped, exchange: exchange), !Task.isCancelled {
                    refusals += 1
                    continue
                }
                if !retried, plan.mayRetry(after: mapped, on: lease, exchange: exchange), !Task.isCancelled {
                    retried = true
                    continue
                }
                throw Task.isCancelled ? LoadError(.cancelled, url: request.url) : plan.explaining(mapped, on: lease, exchange: exchange)
            }
        }
    }

    /// The metrics of sending `plan` now on `lease`, when the load collects them.
    private func metrics(of plan: HTTPRequestPlan, on lease: ConnectionPool.Lease) -> ExchangeMetrics? {
        guard let fetchStart else { return nil }
        return ExchangeMetrics(request: request, head: plan.head, on: lease.connection, fetchStart: fetchStart, reused: lease.reused,
                               proxied: plan.proxy != nil)
    }

    /// Closes the session's keep-alive connections: the idle ones now, one finishing a response when released.
    override public class func sessionDidEnd(_ identifier: Int) {
        HTTPEngine.ifStarted?.pool.closeConnections(ofSession: identifier)
        HTTPEngine.ifStarted?.proxyCredentials.forget(session: identifier)
    }

    /// Connections opened by this process so far, for tests that check reuse.
    public static var connectionsOpened: Int { HTTPEngine.shared.pool.connectionsOpened }
}

/// The process-wide machinery: the event loops, the pool, the TLS contexts, an executor per loop.
final class HTTPEngine: Sendable {
    static let shared = HTTPEngine()
    /// The engine if an HTTP load has made it, without making it otherwise.
    static var ifStarted: HTTPEngine? { started.load(ordering: .acquiring) ? shared : nil }
    private static let started = Atomic<Bool>(false)

    let group: MultiThreadedEventLoopGroup
    let pool: ConnectionPool
    let proxyCredentials = ProxyCredentials()
    private let executors: [EventLoopTaskExecutor]
    private let nextIndex = Atomic<Int>(0)

    private init() {
        // One loop serves many connections well on few cores (measured: ~32 connections per loop on 2 cores).
        group = MultiThreadedEventLoopGroup.singleton
        pool = ConnectionPool(group: group, tls: TLSContextCache())
        executors = group.makeIterator().map { EventLoopTaskExecutor(eventLoop: $0) }
        Self.started.store(true, ordering: .releasing)
    }

    /// The executor over `loop`, if it is one of the engine's loops.
    func executor(for loop: any EventLoop) -> EventLoopTaskExecutor? {
        executors.first { $0.eventLoop === loop }
    }

    func nextExecutor() -> EventLoopTaskExecutor {
        executors[nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue % executors.count]
    }
}

/// What one request becomes on the wire, decided before any connection is taken.
///
/// Cheap to copy: the key is a class, and the head keeps its fields in storage of its own beside the
/// header block's array, so a copy is three reference counts.
struct HTTPRequestPlan: Sendable {
    let key: ConnectionPool.Key
    let head: HTTPRequestHead
    let isIdempotent: Bool
    /// Whether a retry could send the body again from its start (not a pipe's: only its rest is left).
    let canSendBodyAgain: Bool
    /// Whether a `407` from the HTTP proxy the request is sent through (not a tunnel) with a `Basic` challenge
    /// comes back as a ``ProxyChallenge`` for the handler to answer: only when the request can go again, and
    /// sets no `Proxy-Authorization` of its own (which would go instead of any answer).
    let answersProxyChallenges: Bool

    /// The proxy the request goes through (with the credentials it sends), if any.
    var proxy: HTTPClientOptions.Proxy? { key.options.proxy(for: key.scheme) }

    /// Whether the request is a HEAD, whose response has no body whatever its length says.
    var isHead: Bool { head.method == .HEAD }

    /// Whether a failure may be retried once on a new connection: an idempotent request on a reused
    /// connection that was lost before any response byte (the server closed it while idle), or any request
    /// whose connection, new or reused, had closed before a byte of it went out (``RequestNotSent``). Not a
    /// stream the server refused, which ``mayResend(after:exchange:)`` counts, nor one it reset (it may have
    /// processed it).
    func mayRetry(after error: LoadError, on lease: ConnectionPool.Lease, exchange: HTTPExchange) -> Bool {
        mayRetry(after: error, on: lease, exchange: exchange, idempotent: isIdempotent)
    }

    /// ``mayRetry(after:on:exchange:)`` for a request whose method is `idempotent` or not.
    private func mayRetry(after error: LoadError, on lease: ConnectionPool.Lease, exchange: HTTPExchange, idempotent: Bool) -> Bool {
        guard !exchange.responseStarted, error.code == .networkConnectionLost else { return false }
        // Not a byte went out, nor was one of the body read: it may go again whatever its method and body.
        if error.underlying is RequestNotSent { return true }
        return idempotent && lease.reused && canSendBodyAgain && !(error.underlying is HTTP2StreamRefused)
            && !(error.underlying is HTTP2StreamReset)
    }

    /// `error`, saying why the request was not sent again when ``mayRetry(after:on:exchange:)`` refused it only for its
    /// method: a POST on a kept connection that the server closed may have been acted on (RFC 9110 §9.2.2), so it goes
    /// once, where curl would send it again.
    func explaining(_ error: LoadError, on lease: ConnectionPool.Lease, exchange: HTTPExchange) -> LoadError {
        guard !isIdempotent, !(error.underlying is RequestNotSent),
              mayRetry(after: error, on: lease, exchange: exchange, idempotent: true) else { return error }
        var explained = error
        explained.reason = (error.reason.map { $0 + "; " } ?? "") + "the \(head.method.rawValue) was not sent again on a new connection, as it is not idempotent: the server may have acted on it"
        return explained
    }

    /// Whether a request that failed may be sent again whatever its method: the server said it did not
    /// process it (an HTTP/2 stream refused, or after the last its GOAWAY let through), RFC 9113 §8.7.
    /// `exchange`: the one that failed, or `nil` when none began (no stream could open, so no body was read).
    func mayResend(after error: LoadError, exchange: HTTPExchange?) -> Bool {
        error.underlying is HTTP2StreamRefused && (exchange.map { !$0.responseStarted && canSendBodyAgain } ?? true)
    }

    /// How many times one load is sent again after ``mayResend(after:exchange:)``.
    static let maximumRefusals = 4

    /// The `User-Agent` sent unless the request or the options say otherwise.
    static let userAgent = "swift-url-loader/0.1"

    /// - Parameters:
    ///   - tunnelled: The request goes through a tunnel whatever its proxy (a WebSocket handshake): its
    ///     target is the path, and no `Proxy-Authorization` goes with it.
    ///   - proxyCredential: Credentials for an HTTP proxy, over the configured ones; without them, those the
    ///     session's delegates gave for the proxy before (``ProxyCredentials``) when none are configured.
    ///   - answeringProxyChallenges: Whether a forward proxy's `407` is answered (see ``answersProxyChallenges``).
    init(_ request: LoadRequest, tunnelled: Bool = false, proxyCredential: Credential? = nil,
         answeringProxyChallenges: Bool = true) throws(LoadError) {
        let url = request.url
        let scheme = request.scheme
        guard scheme == "http" || scheme == "https" else {
            throw LoadError(.unsupportedURL, url: url, reason: "not an http or https URL")
        }
        // Decoded only when it holds an escape: decoding looks at every byte, and most hosts have none.
        let encodedHost = url.host(percentEncoded: true)
        let decodedHost = encodedHost?.utf8.contains(UInt8(ascii: "%")) == true ? url.host(percentEncoded: false) : encodedHost
        guard let rawHost = decodedHost, !rawHost.isEmpty else {
            throw LoadError(.badURL, url: url, reason: "the URL has no host")
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        // A percent-decoded host may hold a line break or a space; it goes into the Host field, which NIO
        // no longer re-validates (every other field comes from `HTTPFields`, whose values are legal).
        guard !host.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw LoadError(.badURL, url: url, reason: "the host contains a space or a control character")
        }
        let port = url.port ?? ConnectionPool.Key.defaultPort(for: scheme)
        guard (1...65535).contains(port) else {
            throw LoadError(.badURL, url: url, reason: "the port \(port) is out of range")
        }
        // Lowercased only when it may have a capital (an ASCII one, or any non-ASCII letter): most hosts are
        // written in lowercase already.
        let lowercaseHost = host.utf8.contains(where: { ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) || $0 >= 0x80 }) ? host.lowercased() : host
        var options = request.options[HTTPClientOptions.self]
        // The pool's key holds the one proxy this request uses, or none: a host the exceptions name is
        // reached directly, and its connections are those of no proxy.
        // A Unix socket is the connection's end: no proxy goes with it.
        var proxy = options.unixSocketPath == nil ? options.proxy(for: scheme) : nil
        if proxy != nil, HTTPClientOptions.Proxy.bypasses(lowercaseHost, exceptions: options.noProxy) { proxy = nil }
        if let chosen = proxy, chosen.kind == .http,
           let given = proxyCredential
               ?? (chosen.user == nil ? HTTPEngine.shared.proxyCredentials.credential(session: request.sessionIdentifier ?? 0, proxy: chosen) : nil) {
            proxy?.user = given.user
            proxy?.password = given.password
        }
        // The proxy's fields may not frame the message (the client does) nor open another protocol.
        if let chosen = proxy, let framing = chosen.headerFields.first(where: { HTTPClientOptions.Proxy.framingFields.contains($0.name) }) {
            throw LoadError(.unsupportedURL, url: url, reason: "the proxy's fields may not set \(framing.name.rawName): the client frames what it sends")
        }
        if proxy != options.httpProxy || proxy != options.httpsProxy {
            options.httpProxy = scheme == "http" ? proxy : nil
            options.httpsProxy = scheme == "https" ? proxy : nil
        }
        let agent = options.userAgent
        key = ConnectionPool.Key.recent(session: request.sessionIdentifier ?? 0, scheme: scheme, host: lowercaseHost,
                                        port: port, options: options)

        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        // To an HTTP proxy, a plain `http` request names its whole URL (RFC 9112 §3.2.2); an `https` one, and
        // any through a SOCKS proxy, goes through a tunnel, where the server sees it as if there were no proxy:
        // its target is the path, and the proxy's credentials stay out of it. By the scheme, not by which proxy
        // settings are left: `options` keeps both when they name the same proxy (as `-x` sets them).
        let forwardProxy = !tunnelled && !options.tunnelsThroughProxy && scheme == "http" && options.httpProxy?.kind == .http
            ? options.httpProxy : nil
        if forwardProxy != nil { target = "http://" + key.hostField + target }

        let method = request.method
        // A bodiless POST, PUT or PATCH says Content-Length: 0, over any length the request set; any other
        // bodiless request sends no length and no Transfer-Encoding, whatever the request set (a server would
        // wait for a body that never comes, or read the next request as one).
        let sendsZeroLength = request.body == nil && (method == .post || method == .put || method == .patch)
        // One pass copies the fields and learns which of those added below the request has: looking each
        // up in the NIO block (a case-insensitive scan per name) showed in profiles. The block is built as
        // an array and handed over whole: `HTTPHeaders.add` checks each name for non-ASCII bytes and for
        // "connection", which the fields' names (valid tokens) never need.
        var has = (host: false, userAgent: false, contentLength: false, transferEncoding: false, proxyAuthorization: false)
        var lines: [(String, String)] = []
        lines.reserveCapacity(request.headerFields.count + 3)
        // HTTPFields keeps each cookie as a field of its own (its setter splits `a=1; b=2`); a request sends one
        // `Cookie` line (RFC 6265, §5.4), where servers look for them all.
        var cookieLine: Int?
        for field in request.headerFields {
            switch field.name.canonicalName {
            case "cookie":
                if let cookieLine {
                    if !field.value.isEmpty {
                        lines[cookieLine].1 += lines[cookieLine].1.isEmpty ? field.value : "; " + field.value
                    }
                    continue
                }
                cookieLine = lines.count
            case "host": has.host = true
            case "user-agent": has.userAgent = true
            case "content-length":
                has.contentLength = true
                if request.body == nil { continue }
            case "transfer-encoding":
                has.transferEncoding = true
                if request.body == nil { continue }
            case "proxy-authorization":
                // For the proxy alone: never to a server, directly or through a tunnel.
                guard forwardProxy != nil else { continue }
                has.proxyAuthorization = true
            default: break
            }
            lines.append((field.name.rawName, field.value))
        }
        // Host first, as RFC 9112 (§3.2) asks of a user agent, and as curl and URLSession send it; names in their usual
        // case (HTTP/2 lowercases them on its way out).
        if !has.host { lines.insert(("Host", key.hostField), at: 0) }
        if !has.userAgent, let agent {
            // Cleaned as a field's value is (header checks are off): a line break in it would start another field.
            lines.append(("User-Agent", HTTPField.isValidValue(agent) ? agent : HTTPField(name: .userAgent, value: agent).value))
        }
        // The proxy's own fields go with a request it forwards, its `Proxy-Authorization` in place of the credentials'
        // (the request's own wins over both); not a `Host`, which is the server's here (it goes with a `CONNECT`).
        let proxyFields = forwardProxy?.headerFields ?? HTTPFields()
        if !has.proxyAuthorization, proxyFields[.proxyAuthorization] == nil, let authorization = forwardProxy?.authorization {
            lines.append(("Proxy-Authorization", authorization))
        }
        for field in proxyFields where field.name != HTTPClientOptions.Proxy.hostField && !(has.proxyAuthorization && field.name == .proxyAuthorization) {
            lines.append((field.name.rawName, field.value))
        }
        if let body = request.body {
            if !has.contentLength, !has.transferEncoding {
                if let length = body.knownLength {
                    lines.append(("Content-Length", String(length)))
                } else {
                    lines.append(("Transfer-Encoding", "chunked"))
                }
            }
        } else if sendsZeroLength {
            lines.append(("Content-Length", "0"))
        }
        let nioMethod = method == .get ? HTTPMethod.GET : HTTPMethod(rawValue: method.rawValue)
        head = HTTPRequestHead(version: .http1_1, method: nioMethod, uri: target, headers: HTTPHeaders(lines))
        // RFC 9110 §9.2.2.
        switch method {
        case .get, .head, .options, .trace, .put, .delete: isIdempotent = true
        default: isIdempotent = false
        }
        canSendBodyAgain = request.body?.canBeSentAgain ?? true
        // A login the caller wrote (the request's own field, or the proxy's) is theirs to mend: a 407 to it is the result.
        answersProxyChallenges = answeringProxyChallenges && forwardProxy != nil && canSendBodyAgain && !has.proxyAuthorization
            && proxyFields[.proxyAuthorization] == nil
    }
}
