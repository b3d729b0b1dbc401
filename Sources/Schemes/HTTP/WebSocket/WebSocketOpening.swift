import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPTypes
import Loader
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Opens a WebSocket (RFC 6455 §4): a connection of its own to the server (through the session's proxy, with
/// TLS for `wss`), a `GET` with `Upgrade: websocket` carrying the session's header fields and cookies, and on a
/// `101` with the right `Sec-WebSocket-Accept` (NIO's upgrader checks it) the frame handlers in the HTTP ones'
/// place.
enum WebSocketOpening {
    /// The open connection and the server's `101` response; `ask` is put the server-trust question for `wss`, and the
    /// server's `Basic` or `Digest` challenges.
    ///
    /// A redirect (301, 302, 303, 307 or 308 with `Location`) is followed, as URLSession's WebSocket task follows
    /// one, up to the session's ``LoaderSession/Configuration/redirectLimit`` (none when it is 0: the redirect is
    /// then `badServerResponse`): to a `ws:` or `wss:` URL, an `http:` or `https:` one standing for them, within the
    /// schemes the session lets HTTP redirects reach (``LoaderSession/Configuration/redirectSchemes``, read for the
    /// `http:` or `https:` a WebSocket URL stands for). The redirect's cookies are stored; credentials and cookies,
    /// the request's own or the session's, do not go to another origin. No delegate is asked about redirects (a WebSocket
    /// task is no ``LoadTask``).
    ///
    /// A `401` with a `Basic` or `Digest` challenge is answered as ``AuthenticationMiddleware`` answers one
    /// (``ChallengeAnswering``): `ask` first (the session delegate's `session(_:didReceive:)`, the only delegate a
    /// WebSocket task has), then the URL's user info and the session's credential store, three credentials at most
    /// per hop, for the protection space of the `http:` or `https:` URL the handshake is sent to. Unanswered, the
    /// opening fails with `userAuthenticationRequired`. So is an HTTP proxy's `407` to the tunnel, for the proxy's
    /// protection space: `ask`, then the store, three times at most; the credential given is kept for the session's
    /// loads through that proxy, as an HTTP load's is.
    static func open(_ request: LoadRequest, session: LoaderSession, maximumMessageSize: Int, offersCompression: Bool,
                     ask: ConnectionPool.TrustQuestion?) async throws -> (WebSocketConnection, LoadResponse) {
        // The session's fields once, before any redirect, as for an HTTP load: they are dropped with the request's
        // own on a change of origin.
        var current = session.prepared(request)
        // The subprotocols the request offers (its own field or the session's), once for every hop: a list whose empty
        // items a recipient skips (RFC 9110 §5.6.1).
        if let offered = current.headerFields[.secWebSocketProtocol],
           let refusal = refusal(ofOffered: offered.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }, url: request.url) {
            throw refusal
        }
        var hops = 0
        // Per hop, as an HTTP load's authentication layer (inside the redirect layer) answers each hop's challenges
        // and sends its answer with that hop alone: a redirect, even on the same origin, starts without it.
        var answering = ChallengeAnswering(store: session.configuration.credentialStore)
        var answered: String?
        // A proxy's 407 to the tunnel, answered as an HTTP load's is: the delegate, then the store, three times at most.
        var proxyCredential: Credential?
        var proxyQuestions = 0
        var proxyRefusals = 0
        while true {
            if Task.isCancelled { throw LoadError(.cancelled, url: current.url, reason: "the WebSocket was cancelled while it opened") }
            // A host the session's HSTS store covers is reached over TLS, as an `http` load goes as `https` (RFC 6797).
            if let secure = session.configuration.hstsStore?.secureURL(for: current.url) { current.url = secure }
            // A Basic credential the session's loads saw this server accept at or above this path goes ahead, as with
            // a load (not over one the request carries, nor once this hop was challenged).
            let httpURL = try? standIn(for: current.url)
            let kept = answered == nil && current.headerFields[.authorization] == nil ? httpURL.flatMap(session.keptAuthorization(for:)) : nil
            do {
                return try await openOnce(current, authorization: answered ?? kept, proxyCredential: proxyCredential, session: session,
                                          maximumMessageSize: maximumMessageSize, offersCompression: offersCompression, ask: ask)
            } catch let error as LoadError where ProxyChallenge.carried(by: error) != nil {
                guard proxyQuestions < 3, let answer = try await answerProxy(ProxyChallenge.carried(by: error)!, for: current, given: proxyCredential,
                                                                             refusals: &proxyRefusals, session: session, ask: ask) else { throw error }
                proxyQuestions += 1
                proxyCredential = answer
            } catch let challenge as HandshakeChallenge {
                keepState(of: challenge.response, from: current.url, in: session)
                // Refused, the kept credential is no longer sent ahead, by loads either.
                if let kept, let httpURL { session.forgetKeptAuthorization(kept, for: httpURL) }
                answered = try await answer(challenge, to: current, answering: &answering, ask: ask)
            } catch let redirect as HandshakeRedirect {
                keepState(of: redirect.response, from: current.url, in: session)
                let limit = session.configuration.redirectLimit
                guard limit > 0 else {
                    throw LoadError(.badServerResponse, url: current.url,
                                    reason: "the server answered the WebSocket handshake with \(redirect.status), not 101 Switching Protocols (redirects are off)")
                }
                guard hops < limit else {
                    throw LoadError(.httpTooManyRedirects, url: current.url, reason: "the WebSocket handshake was redirected more than \(limit) times")
                }
                hops += 1
                current = try redirected(current, by: redirect, allowedSchemes: session.configuration.redirectSchemes)
                answering = ChallengeAnswering(store: session.configuration.credentialStore)
                answered = nil
                // The next hop may go through another proxy: a login given goes on only as the session keeps it, per proxy.
                (proxyCredential, proxyQuestions, proxyRefusals) = (nil, 0, 0)
            }
        }
    }

    /// The `Authorization` value that answers `challenge` to `request`; throws `userAuthenticationRequired` when nobody
    /// has a credential the server takes, `cancelled` when the socket was cancelled meanwhile.
    private static func answer(_ challenge: HandshakeChallenge, to request: LoadRequest, answering: inout ChallengeAnswering,
                               ask: ConnectionPool.TrustQuestion?) async throws -> String {
        let url = request.url
        // The space is the HTTP server's: a credential kept for https://host:port is the one for wss://host:port.
        let answer: ChallengeAnswering.Answer?
        do {
            answer = try await answering.answer(to: challenge.response, method: "GET", url: try standIn(for: url)) { question in
                let disposition = await ask?(question) ?? .performDefaultHandling
                if Task.isCancelled { throw LoadError(.cancelled, url: url, reason: "the WebSocket was cancelled while its delegate was asked for credentials") }
                return disposition
            }
        } catch var error as LoadError {
            // Named after the socket's URL, not the http one the challenge was answered for.
            error.url = url
            throw error
        }
        guard let answer else {
            let reason = ChallengeAnswering.answers(challenge.response)
                ? "the server asks for credentials to open the WebSocket (401), and no credential given was taken"
                : "the server asks for credentials to open the WebSocket (401) with no Basic or Digest challenge"
            throw LoadError(.userAuthenticationRequired, url: url, reason: reason)
        }
        return answer.authorization
    }

    /// The credential for a proxy's 407 to the tunnel of `request`'s handshake: the session delegate's (`ask`), else the
    /// session's credential store's when nothing was refused yet; `nil` when neither has one. A credential the proxy
    /// refused is no longer sent unasked by the session's loads; one given is, as an HTTP load's answer is kept.
    private static func answerProxy(_ challenge: ProxyChallenge, for request: LoadRequest, given: Credential?, refusals: inout Int,
                                    session: LoaderSession, ask: ConnectionPool.TrustQuestion?) async throws -> Credential? {
        var http = request
        http.url = try standIn(for: request.url)
        guard let proxy = try HTTPRequestPlan(http, tunnelled: true, proxyCredential: given).proxy else { return nil }
        let credentials = HTTPEngine.shared.proxyCredentials
        let sessionID = request.sessionIdentifier ?? 0
        // A login sent (given, configured or kept) and refused, as an HTTP load counts it: not sent unasked again.
        if let sent = proxy.credential {
            refusals += 1
            credentials.forget(sent, session: sessionID, proxy: proxy)
        }
        let refused = refusals
        let space = challenge.space(at: proxy)
        let question = AuthenticationChallenge(protectionSpace: space, previousFailureCount: refused, proposedCredential: proxy.credential)
        let disposition = await ask?(question) ?? .performDefaultHandling
        if Task.isCancelled { throw LoadError(.cancelled, url: request.url, reason: "the WebSocket was cancelled while its delegate was asked for the proxy's credentials") }
        var answer = try challenge.credential(from: disposition, at: proxy, url: request.url)
        // Default handling from the store, once, as the loader's driver answers a handler's question.
        if answer == nil, case .performDefaultHandling = disposition, refused == 0 {
            answer = session.configuration.credentialStore?.credential(for: space)
        }
        if let answer { credentials.set(answer, session: sessionID, proxy: proxy) }
        return answer
    }

    /// Keeps what an answer to the handshake (a 101, a refusal, a redirect) leaves with the session: its cookies, for
    /// the next try, and over `wss` its `Strict-Transport-Security` policy, as an HTTPS response's.
    private static func keepState(of response: LoadResponse, from url: URL, in session: LoaderSession) {
        if let store = session.configuration.cookieStore {
            let values = response.headerFields[values: .setCookie]
            if !values.isEmpty { store.save(setCookie: values, from: url) }
        }
        session.configuration.hstsStore?.record(from: response)
    }

    /// The `http:` or `https:` URL a `ws:` or `wss:` one stands for: the handshake is an HTTP request to it.
    private static func standIn(for url: URL) throws -> URL {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw LoadError(.badURL, url: url, reason: "not a URL")
        }
        parts.scheme = url.scheme?.lowercased() == "wss" ? "https" : "http"
        guard let http = parts.url else { throw LoadError(.badURL, url: url, reason: "not a URL") }
        return http
    }

    /// `request` sent where `redirect` points, if `allowedSchemes` (HTTP's, lowercase) let it go there.
    private static func redirected(_ request: LoadRequest, by redirect: HandshakeRedirect, allowedSchemes: Set<String>) throws -> LoadRequest {
        guard var target = RedirectMiddleware.target(of: redirect.location, from: request.url),
              var parts = URLComponents(url: target, resolvingAgainstBaseURL: false) else {
            throw LoadError(.badServerResponse, url: request.url, reason: "the redirect's Location '\(redirect.location.prefix(200))' is not a URL")
        }
        switch parts.scheme?.lowercased() {
        case "ws"?, "http"?: parts.scheme = "ws"
        case "wss"?, "https"?: parts.scheme = "wss"
        default:
            throw LoadError(.unsupportedURL, url: request.url,
                            reason: "the WebSocket handshake was redirected to \(target.absoluteStringHidingPassword), not a ws:, wss:, http: or https: URL")
        }
        guard let mapped = parts.url else {
            throw LoadError(.badServerResponse, url: request.url, reason: "the redirect's Location '\(redirect.location.prefix(200))' is not a URL")
        }
        target = mapped
        // As HTTP's: within the request's own scheme, or to one the session allows (wss to ws is https to http).
        let standsFor = target.scheme == "wss" ? "https" : "http"
        guard target.scheme == request.url.scheme?.lowercased() || allowedSchemes.contains(standsFor) else {
            throw LoadError(.unsupportedURL, url: request.url,
                            reason: "the WebSocket handshake's redirect to \(target.absoluteStringHidingPassword) is not followed: \(standsFor) is not among the session's redirect schemes")
        }
        var next = request
        next.url = target
        RedirectMiddleware.leaveBehind(in: &next, from: request.url)
        return next
    }

    /// One handshake, at `request`'s URL, with `authorization` (an answer to this hop's challenge) if given; throws
    /// ``HandshakeRedirect`` for a redirect and ``HandshakeChallenge`` for a 401.
    private static func openOnce(_ request: LoadRequest, authorization: String?, proxyCredential: Credential?, session: LoaderSession,
                                 maximumMessageSize: Int, offersCompression: Bool,
                                 ask: ConnectionPool.TrustQuestion?) async throws -> (WebSocketConnection, LoadResponse) {
        let url = request.url
        let scheme = request.scheme
        guard scheme == "ws" || scheme == "wss" else {
            throw LoadError(.unsupportedURL, url: url, reason: "a WebSocket URL starts with ws: or wss:")
        }
        // The handshake is HTTP's: the plan of the same request over http(s) gives the pool's key (origin,
        // options, proxy) and the request's fields with Host and User-Agent. `request` is prepared (`open`).
        var http = request
        http.url = try standIn(for: url)
        if let authorization { http.headerFields[.authorization] = authorization }
        http.method = .get
        http.body = nil
        // Per-message compression, unless the request offers extensions of its own (whose answer is still checked).
        if offersCompression, http.headerFields[.secWebSocketExtensions] == nil {
            http.headerFields[.secWebSocketExtensions] = PerMessageDeflate.offer
        }
        if let store = session.configuration.cookieStore, http.headerFields[.cookie] == nil, let field = store.cookieField(for: url) {
            http.headerFields[.cookie] = field
        }
        let offeredExtensions = http.headerFields[.secWebSocketExtensions]
        // The request timeout, as for any load: how long the handshake may go unanswered, and what this end sends unread.
        let idle = request.timeoutInterval ?? session.configuration.timeoutIntervalForRequest
        // Through a proxy the handshake always goes in a tunnel (``ConnectionPool/openUnpooled(_:url:ask:)``).
        let plan: HTTPRequestPlan
        do {
            plan = try HTTPRequestPlan(http, tunnelled: true, proxyCredential: proxyCredential)
        } catch {
            // Named after the socket's URL (ws://…), not the http one the plan was made from.
            var named = error
            named.url = url
            throw named
        }
        let requestHead = plan.head

        let (channel, fault) = try await HTTPEngine.shared.pool.openUnpooled(plan.key, url: url, ask: ask)
        let opened = channel.eventLoop.makePromise(of: HTTPResponseHead.self)
        // A pong waits the request timeout, but no longer than a minute: a session without a timeout still finds a
        // dead connection by its ping.
        let connection = WebSocketConnection(channel: channel, url: url, pongPatience: ConnectionPool.timeAmount(min(idle, 60)))
        do {
            try await channel.eventLoop.submit {
                // Closed already, its close unheard by the handlers below: say why, rather than wait for an answer.
                guard channel.isActive else {
                    throw fault.withLock { $0 } ?? LoadError(.networkConnectionLost, url: url, reason: "the connection closed before the WebSocket handshake")
                }
                let sync = channel.pipeline.syncOperations
                let watcher = HandshakeWatcher(url: url, opened: opened)
                let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: maximumMessageSize, automaticErrorHandling: false) { channel, response in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        do {
                            // NIO checks the status, Upgrade and the accept key; RFC 6455 (§4.1) asks for this token too.
                            guard response.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "upgrade" }) else {
                                throw LoadError(.badServerResponse, url: url, reason: "the server's 101 has no Connection: Upgrade (RFC 6455 §4.1)")
                            }
                            let extensions = response.headers[canonicalForm: "sec-websocket-extensions"].joined(separator: ", ")
                            let agreed: PerMessageDeflate?
                            do {
                                agreed = try PerMessageDeflate.agreed(in: extensions.isEmpty ? nil : extensions, offered: offeredExtensions)
                            } catch {
                                throw LoadError(.badServerResponse, url: url, reason: "\(error)")
                            }
                            // Before the aggregator, which keeps no reserved bit of a message's first frame. Empty
                            // fragments are allowed (RFC 6455 §5.4); their number is bounded.
                            try sync.addHandler(PerMessageDeflateHandler(agreed: agreed, maximumMessageSize: maximumMessageSize, connection: connection))
                            try sync.addHandler(NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 16,
                                                                            maxAccumulatedFrameSize: maximumMessageSize))
                            try sync.addHandler(WebSocketFrameHandler(connection: connection, maximumMessageSize: maximumMessageSize))
                            // Few bytes wait unsent in the kernel (TCP_NOTSENT_LOWAT, 128 KiB): the socket takes more as soon
                            // as a slow server reads some, so the watch below sees its progress (without it Linux waits for a
                            // third of the send buffer, up to 1.3 MiB, to drain), and a ping waits behind less. Not for a Unix
                            // socket, which refuses it.
                            try? channel.syncOptions?.setOption(.socket(SocketOptionLevel(IPPROTO_TCP), SocketOptionName(TCP_NOTSENT_LOWAT)), value: 128 << 10)
                            // Next to the socket, so that it counts bytes as they go out (after TLS).
                            try sync.addHandler(SocketWriteWatch(limit: ConnectionPool.timeAmount(idle)) {
                                connection.ended(LoadError(.timedOut, url: url, reason: "the server read nothing of what was sent for \(idle.printed("%g")) s (the request timeout)"),
                                                 code: .abnormalClosure, reason: nil)
                            }, position: .first)
                            // Out before the frames the upgrade held back flow (it takes HTTP parts, not frames).
                            sync.removeHandler(try sync.handler(type: HandshakeWatcher.self), promise: nil)
                            opened.succeed(response)
                        } catch {
                            opened.fail(error)
                            channel.close(promise: nil)
                            throw error
                        }
                    }
                }
                try sync.addHandler(CloseHeldForUpgrade(), position: .first)
                try sync.addHTTPClientHandlers(leftOverBytesStrategy: .forwardBytes, enableOutboundHeaderValidation: false,
                                               withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                try sync.addHandler(watcher)
                channel.write(HTTPClientRequestPart.head(requestHead), promise: nil)
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            }.get()
            let timer = channel.eventLoop.scheduleTask(in: ConnectionPool.timeAmount(idle)) {
                opened.fail(LoadError(.timedOut, url: url, reason: "no answer to the WebSocket handshake within \(idle.printed("%g")) s (the request timeout)"))
            }
            defer { timer.cancel() }
            let answer = try await withTaskCancellationHandler {
                try await opened.futureResult.get()
            } onCancel: {
                opened.fail(LoadError(.cancelled, url: url))
            }
            let response = LoadResponse(url: url, head: answer)
            try checkSubprotocol(of: response, offered: http.headerFields[.secWebSocketProtocol])
            keepState(of: response, from: url, in: session)
            return (connection, response)
        } catch {
            // Failed where it may never have been completed (the server closed before the handlers went in).
            opened.fail(error)
            channel.close(promise: nil)
            if error is HandshakeRedirect || error is HandshakeChallenge { throw error }
            throw HTTPErrorMapping.map(error, url: url)
        }
    }
}

/// A handshake answered with a redirect: its status, the response, and where to.
struct HandshakeRedirect: Error {
    let status: Int
    let response: LoadResponse
    let location: String
}

/// A handshake answered with `401 Unauthorized`: the response, with its challenges.
struct HandshakeChallenge: Error {
    let response: LoadResponse
}

extension WebSocketOpening {
    /// Why the subprotocols `offered` cannot be offered, if they cannot: one that is not a token (RFC 9110's `tchar`s),
    /// or one named twice (RFC 6455 §4.1).
    static func refusal(ofOffered offered: [String], url: URL) -> LoadError? {
        var seen: Set<String> = []
        for offer in offered {
            // A field name is a token too: HTTPTypes checks the same characters.
            guard HTTPField.Name(offer) != nil else { return LoadError(.badURL, url: url, reason: "the subprotocol '\(offer.prefix(100))' is not a token") }
            guard seen.insert(offer).inserted else { return LoadError(.badURL, url: url, reason: "the subprotocol '\(offer)' is offered twice") }
        }
        return nil
    }

    /// Throws unless the `101` took at most one subprotocol, and one of those `offered` (a list, as sent): a client
    /// must fail a handshake whose server chose otherwise (RFC 6455 §4.1).
    static func checkSubprotocol(of response: LoadResponse, offered: String?) throws {
        let chosen = response.headerFields[values: .secWebSocketProtocol]
        guard !chosen.isEmpty else { return }
        let offers = (offered ?? "").split(separator: ",").map { String($0.trimmingSpaces()) }
        guard chosen.count == 1, let taken = chosen.first, offers.contains(taken) else {
            let list = offers.isEmpty ? "none" : offers.joined(separator: ", ")
            throw LoadError(.badServerResponse, url: response.url,
                            reason: "the server took the subprotocol \(chosen.map { "'\($0)'" }.joined(separator: ", ")), not one the handshake offered (\(list))")
        }
    }
}

/// Waits in the handshake's pipeline, after NIO's upgrade handler: it sees the response only when the server
/// did not switch protocols (or the upgrade was refused), and fails the opening with what the server said.
private final class HandshakeWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let url: URL
    private let opened: EventLoopPromise<HTTPResponseHead>

    init(url: URL, opened: EventLoopPromise<HTTPResponseHead>) {
        self.url = url
        self.opened = opened
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let code = Int(head.status.code)
        let response = { LoadResponse(url: self.url, head: head) }
        if RedirectMiddleware.redirectStatuses.contains(code), let location = head.headers.first(name: "location"), !location.isEmpty {
            opened.fail(HandshakeRedirect(status: code, response: response(), location: location))
            context.close(promise: nil)
            return
        }
        if code == 401 {
            opened.fail(HandshakeChallenge(response: response()))
            context.close(promise: nil)
            return
        }
        let status = "\(head.status.code) \(head.status.reasonPhrase)"
        opened.fail(LoadError(.badServerResponse, url: url, reason: "the server answered the WebSocket handshake with \(status), not 101 Switching Protocols"))
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        opened.fail(Self.failure(error, url: url))
        context.close(promise: nil)
    }

    /// Why the handshake failed: the upgrade's refusals of the server's `101` are bad answers; anything else (a TLS
    /// alert refusing the client's certificate, a reset connection, a malformed response) is named as it would be
    /// for any HTTP request.
    static func failure(_ error: any Error, url: URL) -> LoadError {
        let reason: String
        switch error as? NIOHTTPClientUpgradeError {
        case .upgraderDeniedUpgrade?: reason = "the server's 101 answer did not accept the WebSocket key (Sec-WebSocket-Accept)"
        case .responseProtocolNotFound?: reason = "the server's 101 answer switched to a protocol other than websocket"
        case _?: reason = "the WebSocket handshake failed: \(error)"
        case nil:
            let mapped = HTTPErrorMapping.map(error, url: url)
            guard mapped.code == .unknown else { return mapped }
            reason = "the WebSocket handshake failed: \(error)"
        }
        return LoadError(.badServerResponse, url: url, reason: reason, underlying: error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Here only with no upgrade under way (``CloseHeldForUpgrade``): an upgrade removes this handler.
        opened.fail(LoadError(.networkConnectionLost, url: url, reason: "the connection closed during the WebSocket handshake"))
        context.fireChannelInactive()
    }
}

extension LoadResponse {
    /// The response a handshake's answer `head` makes, for `url`.
    fileprivate init(url: URL, head: HTTPResponseHead) {
        self.init(url: url, status: HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase),
                  headerFields: HTTPFields(head.headers))
    }
}
