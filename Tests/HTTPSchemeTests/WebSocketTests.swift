import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import Synchronization
import TestSupport
import Testing

/// Answers the session-level challenge (a WebSocket handshake's server trust) with `answer`, recording each; an
/// answer of `nil` waits, a minute at most (the socket's cancel should end the wait first), then refuses.
private final class SessionTrustAnswerer: LoaderSessionDelegate {
    let answer: ChallengeDisposition?
    let seen = Locked<[AuthenticationChallenge]>([])
    /// Whether a wait was ended early (its answering task cancelled).
    let waitEnded = Locked(false)
    init(_ answer: ChallengeDisposition?) { self.answer = answer }
    func session(_ session: LoaderSession, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        seen.withLock { $0.append(challenge) }
        guard let answer else {
            try? await Task.sleep(for: .seconds(60))
            if Task.isCancelled { waitEnded.withLock { $0 = true } }
            return .rejectProtectionSpace
        }
        return answer
    }
}

/// Records a WebSocket's open and close events, in order, as the delegate of a task or of a session.
private final class SocketEvents: LoaderSessionDelegate, WebSocketTaskDelegate {
    let events = Locked<[String]>([])
    func webSocketTask(_ task: WebSocketTask, didOpenWithProtocol protocol: String?) {
        events.withLock { $0.append("open \(`protocol` ?? "-")") }
    }
    func webSocketTask(_ task: WebSocketTask, didCloseWith code: WebSocketTask.CloseCode, reason: Data?) {
        events.withLock { $0.append("close \(code.rawValue) \(reason.map { String(decoding: $0, as: UTF8.self) } ?? "-")") }
    }
}

/// WebSockets against a real server (the websockets package, scripts/ws-server.py).
@Suite("ws(s): WebSocket tasks against a real server")
struct WebSocketTests {
    private func servers() throws -> TestServers.WebSockets {
        try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
    }

    private func ws(_ path: String) throws -> URL { URL(string: "ws://127.0.0.1:\(try servers().port)\(path)")! }

    @Test("Text and binary messages go out and come back in order; a ping gets its pong; the 101 answer is kept")
    func echo() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/echo"))
        socket.resume()
        try await socket.send(.string("héllo"))
        try await socket.send(.data(Data([0, 1, 2, 255])))
        let large = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try await socket.send(.data(large))
        #expect(try await socket.receive() == .string("héllo"))
        #expect(try await socket.receive() == .data(Data([0, 1, 2, 255])))
        #expect(try await socket.receive() == .data(large))
        try await socket.sendPing()
        #expect(socket.response?.status?.code == 101)
        #expect(socket.closeCode == nil)
        socket.cancel(with: .goingAway, reason: Data("bye".utf8))
        #expect(socket.closeCode == .goingAway && socket.closeReason == Data("bye".utf8))
        let after = await loadError { _ = try await socket.receive() }
        #expect(after?.code == .cancelled, "\(String(describing: after))")
        let send = await loadError { try await socket.send(.string("too late")) }
        #expect(send?.code == .cancelled, "\(String(describing: send))")
    }

    @Test("An open socket is the session's running work: invalidateAndCancel closes it (1001), and the session is invalid after")
    func sessionInvalidation() async throws {
        final class Watcher: LoaderSessionDelegate {
            let invalid = Locked(false)
            func session(_ session: LoaderSession, didBecomeInvalidWithError error: LoadError?) { invalid.withLock { $0 = true } }
        }
        let watcher = Watcher()
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        let session = LoaderSession(configuration: configuration, delegate: watcher)
        let socket = session.webSocketTask(with: try ws("/echo"))
        try await socket.send(.string("still here"))
        #expect(try await socket.receive() == .string("still here"))
        session.finishTasksAndInvalidate()
        #expect(!watcher.invalid.withLock { $0 }, "an open socket is running work: the session waits for it")
        session.invalidateAndCancel()
        #expect(socket.closeCode == .goingAway)
        let after = await loadError { _ = try await socket.receive() }
        #expect(after?.code == .cancelled, "\(String(describing: after))")
        #expect(await eventually(within: 10) { watcher.invalid.withLock { $0 } }, "reported invalid once the socket closed")
        let refused = await loadError { try await session.webSocketTask(with: try ws("/echo")).send(.string("late")) }
        #expect(refused?.code == .cancelled, "\(String(describing: refused))")
    }

    @Test("wss: through TLS with the test CA; an untrusted certificate fails the handshake as untrusted")
    func secure() async throws {
        let url = URL(string: "wss://localhost:\(try servers().tlsPort)/echo")!
        let socket = try Nginx.session().webSocketTask(with: url)
        try await socket.send(.string("over TLS"))
        #expect(try await socket.receive() == .string("over TLS"))
        socket.cancel()
        let untrusted = await loadError { _ = try await plainHTTPSession().webSocketTask(with: url).receive() }
        #expect(untrusted?.code == .serverCertificateUntrusted, "\(String(describing: untrusted))")
        #expect(untrusted?.url == url)
    }

    @Test("wss: the session delegate is put the server's certificate: trusting an unknown CA opens, refusing a known one fails")
    func secureAskingTheDelegate() async throws {
        let url = URL(string: "wss://localhost:\(try servers().tlsPort)/echo")!

        // A development server: the standard rules refuse the test CA, the delegate trusts it.
        let trusting = SessionTrustAnswerer(.trustServer)
        let socket = plainHTTPSession(delegate: trusting).webSocketTask(with: url)
        try await socket.send(.string("trusted by the delegate"))
        #expect(try await socket.receive() == .string("trusted by the delegate"))
        socket.cancel()
        let asked = trusting.seen.withLock { $0 }
        #expect(asked.count == 1)
        #expect(asked.first?.serverTrust?.host == "localhost")
        #expect(asked.first?.serverTrust?.defaultEvaluationError?.code == .serverCertificateUntrusted)
        #expect(asked.first?.serverTrust?.certificates.isEmpty == false)

        // Pinning: the standard rules accept the server (the test CA is trusted), the delegate refuses it.
        let refusing = SessionTrustAnswerer(.rejectProtectionSpace)
        let caFile = try Nginx.require().caFile
        let withCA: (inout LoaderSession.Configuration) -> Void = { $0.handlerOptions[HTTPClientOptions.self].tls.additionalTrustRootsPEMFile = caFile }
        let refused = await loadError { _ = try await plainHTTPSession(delegate: refusing, configure: withCA).webSocketTask(with: url).receive() }
        #expect(refused?.code == .serverCertificateUntrusted && refused?.url == url, "\(String(describing: refused))")
        #expect(refusing.seen.withLock { $0.count } == 1)
        #expect(refusing.seen.withLock { $0.first?.serverTrust?.defaultEvaluationError } == nil)

        // Cancelling the socket while the delegate thinks about a server the standard rules accepted ends the
        // handshake at once. (For one they refused, the connection waiting for the answer is closed too.)
        let slow = SessionTrustAnswerer(nil)
        let waiting = plainHTTPSession(delegate: slow, configure: withCA).webSocketTask(with: url)
        let receiving = Task { await loadError { _ = try await waiting.receive() } }
        #expect(await eventually { slow.seen.withLock { $0.count } == 1 })
        waiting.cancel()
        let cancelled = await receiving.value
        #expect(cancelled?.code == .cancelled, "\(String(describing: cancelled))")
        // The answering task ends just after the wait did.
        #expect(await eventually { slow.waitEnded.withLock { $0 } })

        // A socket let go while the delegate thinks ends the wait too (and closes).
        let forgotten = SessionTrustAnswerer(nil)
        do {
            let socket = plainHTTPSession(delegate: forgotten, configure: withCA).webSocketTask(with: url)
            socket.resume()
            #expect(await eventually { forgotten.seen.withLock { $0.count } == 1 })
        }
        #expect(await eventually { forgotten.waitEnded.withLock { $0 } })
    }

    @Test("A delegate hears the socket open, with the server's subprotocol, then close once: with the server's close frame, with this end's cancel")
    func delegateEvents() async throws {
        // The task's own delegate: the server's subprotocol, then this end's close.
        let own = SocketEvents()
        let offered = try Nginx.session().webSocketTask(with: try ws("/protocol"), protocols: ["superchat", "chat"])
        offered.delegate = own
        #expect(try await offered.receive() == .string("chat"))
        #expect(own.events.withLock { $0 } == ["open chat"])
        offered.cancel(with: .goingAway, reason: Data("bye".utf8))
        #expect(await eventually { own.events.withLock { $0 } == ["open chat", "close 1001 bye"] }, "\(own.events.withLock { $0 })")
        #expect(await eventually { offered.delegate == nil }, "the delegate is let go once told of the close")

        // The session's delegate, for a task with none: the server's close frame (4000, "done").
        let sessionEvents = SocketEvents()
        let session = LoaderSession(configuration: .ephemeral, delegate: sessionEvents)
        let closing = session.webSocketTask(with: try ws("/close"))
        #expect(try await closing.receive() == .string("closing"))
        #expect(await eventually { sessionEvents.events.withLock { $0 } == ["open -", "close 4000 done"] }, "\(sessionEvents.events.withLock { $0 })")
        #expect(closing.closeCode?.rawValue == 4000)
        // Told once: nothing more comes after.
        try await Task.sleep(for: .milliseconds(200))
        #expect(sessionEvents.events.withLock { $0.count } == 2)
    }

    @Test("Subprotocols: the handshake offers them, the server's choice is read back; one the client did not offer fails it")
    func subprotocols() async throws {
        let offered = try Nginx.session().webSocketTask(with: try ws("/protocol"), protocols: ["superchat", "chat"])
        #expect(try await offered.receive() == .string("chat"))
        #expect(offered.selectedProtocol == "chat")
        offered.cancel()

        let none = try Nginx.session().webSocketTask(with: try ws("/protocol"), protocols: [])
        #expect(try await none.receive() == .string(""))
        #expect(none.selectedProtocol == nil)
        none.cancel()

        for protocols in [["chat"], []] {
            let url = try ws("/protocol-unasked")
            let failed = await loadError { _ = try await Nginx.session().webSocketTask(with: url, protocols: protocols).receive() }
            #expect(failed?.code == .badServerResponse && failed?.url == url, "\(String(describing: failed))")
            #expect(failed?.reason?.contains("unasked") == true, "\(String(describing: failed))")
        }
    }

    @Test("A subprotocol that is no token (a space, a comma, empty) or is named twice fails the opening with badURL naming it, nothing sent")
    func subprotocolTokens() async throws {
        let url = try ws("/protocol")
        for (protocols, named) in [(["chat", "a b"], "a b"), (["x,y"], "x,y"), ([""], "''"), (["chat", "chat"], "chat")] {
            let failed = await loadError { _ = try await Nginx.session().webSocketTask(with: url, protocols: protocols).receive() }
            #expect(failed?.code == .badURL && failed?.url == url, "\(protocols): \(String(describing: failed))")
            #expect(failed?.reason?.contains(named) == true, "\(protocols): \(String(describing: failed))")
        }
        // The same checks for a request's own field.
        var request = LoadRequest(url: url)
        request.headerFields[.secWebSocketProtocol] = "chat, chat"
        let twice = await loadError { _ = try await Nginx.session().webSocketTask(with: request).receive() }
        #expect(twice?.code == .badURL, "\(String(describing: twice))")
        // Tokens may hold the symbols RFC 9110 allows.
        let fine = try Nginx.session().webSocketTask(with: url, protocols: ["v1.chat+json", "chat"])
        #expect(try await fine.receive() == .string("chat"))
        fine.cancel()
    }

    @Test("The server's close: messages before it are read, then receive throws and the code and reason are kept")
    func serverCloses() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/close"))
        #expect(try await socket.receive() == .string("closing"))
        let error = await loadError { _ = try await socket.receive() }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.reason?.contains("4000") == true && error?.reason?.contains("done") == true, "\(String(describing: error))")
        #expect(socket.closeCode?.rawValue == 4000)
        #expect(socket.closeReason == Data("done".utf8))

        let many = try Nginx.session().webSocketTask(with: try ws("/many"))
        var received: [String] = []
        while case .string(let text)? = try? await many.receive() { received.append(text) }
        #expect(received == (0..<200).map(String.init), "every message, in order, before the close")
        #expect(many.closeCode == .normalClosure)
    }

    /// `socket.receive()`, cancelled (so failing) if no message comes within `seconds`.
    private func receive(_ socket: WebSocketTask, within seconds: Int = 30) async throws -> WebSocketTask.Message {
        let waiting = Task { try await socket.receive() }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(seconds))
            waiting.cancel()
        }
        defer { watchdog.cancel() }
        return try await waiting.value
    }

    @Test("A reader that falls behind holds the server back and then gets every message in order; a cancelled receive leaves the socket open")
    func slowReader() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/flood"))
        socket.resume()
        // 16 MiB at once: reading stops after 16 messages wait unread (the socket's buffers then fill and the
        // server waits), and goes on as they are taken.
        try await Task.sleep(for: .milliseconds(300))
        var received: [Data] = []
        while received.count < 64 {
            guard case .data(let data) = try await receive(socket) else { break }
            received.append(data)
            if received.count % 16 == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(received.count == 64)
        #expect(received.enumerated().allSatisfy { index, data in data.count == 256 * 1024 && data.allSatisfy { $0 == UInt8(index) } })
        let end = await loadError { _ = try await receive(socket) }
        #expect(end?.code == .networkConnectionLost && socket.closeCode == .normalClosure, "\(String(describing: end))")

        let echo = try Nginx.session().webSocketTask(with: try ws("/echo"))
        let waiting = Task { try await echo.receive() }
        try await Task.sleep(for: .milliseconds(200))
        waiting.cancel()
        let cancelled = await loadError { _ = try await waiting.value }
        #expect(cancelled?.code == .cancelled, "\(String(describing: cancelled))")
        try await echo.send(.string("still open"))
        #expect(try await receive(echo) == .string("still open"))
        // A receive whose task was cancelled before it began (before the socket opened, here) ends as cancelled too:
        // its wait was once registered after the cancellation had run, and never ended.
        let ended = Atomic<Bool>(false)
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            defer { ended.store(true, ordering: .releasing) }
            return try await Nginx.session().webSocketTask(with: try ws("/echo")).receive()
        }
        if await eventually(within: 20, { ended.load(ordering: .acquiring) }) {
            let earlyError = await loadError { _ = try await early.value }
            #expect(earlyError?.code == .cancelled, "\(String(describing: earlyError))")
        } else {
            Issue.record("a receive cancelled before it began never ended")
        }
        echo.cancel()
    }

    @Test("A refused handshake, a message over the limit, and a connection dropped without a close frame are typed errors naming the URL")
    func failures() async throws {
        let missing = try ws("/nowhere")
        let refused = await loadError { _ = try await Nginx.session().webSocketTask(with: missing).receive() }
        #expect(refused?.code == .badServerResponse && refused?.url == missing, "\(String(describing: refused))")
        #expect(refused?.reason?.contains("404") == true, "\(String(describing: refused))")

        let big = try Nginx.session().webSocketTask(with: try ws("/big"))
        big.maximumMessageSize = 512 * 1024
        let tooBig = await loadError { _ = try await big.receive() }
        #expect(tooBig?.code == .dataLengthExceedsMaximum, "\(String(describing: tooBig))")
        #expect(big.closeCode == .messageTooBig)

        let dropped = try Nginx.session().webSocketTask(with: try ws("/drop"))
        #expect(try await dropped.receive() == .string("dropping"))
        let lost = await loadError { _ = try await dropped.receive() }
        #expect(lost?.code == .networkConnectionLost, "\(String(describing: lost))")
        #expect(dropped.closeCode == .abnormalClosure)

        let wrong = URL(string: "http://127.0.0.1:\(try servers().port)/echo")!
        let unsupported = await loadError { _ = try await Nginx.session().webSocketTask(with: wrong).receive() }
        #expect(unsupported?.code == .unsupportedURL)
        // A URL without a host is badURL, named as given (it named the http:// stand-in of the handshake).
        let hostless = URL(string: "ws://")!
        let bad = await loadError { _ = try await Nginx.session().webSocketTask(with: hostless).receive() }
        #expect(bad?.code == .badURL && bad?.url == hostless, "\(String(describing: bad))")
        let closed = URL(string: "ws://127.0.0.1:\(LoopbackPorts.closed())/echo")!
        let unreachable = await loadError { _ = try await Nginx.session().webSocketTask(with: closed).receive() }
        #expect(unreachable?.code == .cannotConnectToHost && unreachable?.url == closed, "\(String(describing: unreachable))")
        #expect((unreachable?.underlying as? POSIXError)?.code == .ECONNREFUSED, "\(String(describing: unreachable?.underlying))")
    }

    @Test("A handshake answered by a reset or a malformed status line fails as an HTTP request would: connection lost, bad response")
    func handshakeMisbehaviour() async throws {
        let server = try ScriptedServer()
        let reset = URL(string: "ws://127.0.0.1:\(server.port)/reset-now")!
        let lost = await loadError { _ = try await plainHTTPSession().webSocketTask(with: reset).receive() }
        #expect(lost?.code == .networkConnectionLost && lost?.url == reset, "\(String(describing: lost))")
        let garbled = URL(string: "ws://127.0.0.1:\(server.port)/bad-status")!
        let malformed = await loadError { _ = try await plainHTTPSession().webSocketTask(with: garbled).receive() }
        #expect(malformed?.code == .badServerResponse && malformed?.url == garbled && malformed?.reason?.contains("malformed HTTP response") == true,
                "\(String(describing: malformed))")
    }

    @Test("A server that closes right after its 101 and a first message (often one read): the socket opened, gave the message, then ended")
    func closedWithTheHandshake() async throws {
        for _ in 0..<10 {
            let socket = try Nginx.session().webSocketTask(with: try ws("/drop-now"))
            // The close in the read that brought the 101 once dropped the message with it (NIO's HTTP decoder, told
            // of the close before its removal, discards the bytes after the 101).
            #expect(try await socket.receive() == .string("dropping"))
            let ending = await loadError { _ = try await socket.receive() }
            #expect(socket.response?.status?.code == 101, "the handshake succeeded: \(String(describing: ending))")
            #expect(ending?.code == .networkConnectionLost && ending?.reason?.contains("handshake") == false, "\(String(describing: ending))")
            #expect(socket.closeCode == .abnormalClosure)
        }
    }

    @Test("The handshake carries the session's header fields and its cookie store's cookies for the ws URL")
    func handshakeFields() async throws {
        final class Store: CookieStore {
            func cookieField(for url: URL) -> String? { url.scheme == "ws" ? "session=abc" : nil }
            func save(setCookie values: [String], from url: URL) {}
        }
        let session = try Nginx.session {
            $0.cookieStore = Store()
            $0.additionalHeaderFields[HTTPField.Name("X-Greeting")!] = "hello"
        }
        let socket = session.webSocketTask(with: try ws("/cookie"))
        #expect(try await socket.receive() == .string("session=abc"))
        #expect(try await socket.receive() == .string("hello"))
        socket.cancel()
    }

    @Test("A redirected handshake is followed (relative, http standing for ws, to wss on another origin) up to the limit; its cookies are kept")
    func redirects() async throws {
        let session = try Nginx.session()
        for path in ["/moved", "/moved-http", "/moved-secure"] {
            let socket = session.webSocketTask(with: try ws(path))
            try await socket.send(.string("after \(path)"))
            #expect(try await socket.receive() == .string("after \(path)"))
            #expect(socket.response?.status?.code == 101)
            #expect(socket.response?.url.path() == "/echo", "\(path)")
            #expect(socket.response?.url.scheme == (path == "/moved-secure" ? "wss" : "ws"), "\(path)")
            socket.cancel()
        }

        let recorder = RecordingReplayCookieStore(sending: "moved=1")
        let cookies = try Nginx.session { $0.cookieStore = recorder }.webSocketTask(with: try ws("/moved-cookie"))
        #expect(try await cookies.receive() == .string("moved=1"))
        #expect(recorder.saved.withLock { $0 } == ["moved=1; Path=/; Expires=Wed, 01 Jan 2031 00:00:00 GMT"])
        cookies.cancel()

        let loop = try ws("/moved-loop")
        let tooMany = await loadError { _ = try await Nginx.session { $0.redirectLimit = 3 }.webSocketTask(with: loop).receive() }
        #expect(tooMany?.code == .httpTooManyRedirects && tooMany?.url == loop, "\(String(describing: tooMany))")
        let off = await loadError { _ = try await Nginx.session { $0.redirectLimit = 0 }.webSocketTask(with: try ws("/moved-cookie")).receive() }
        #expect(off?.code == .badServerResponse && off?.reason?.contains("302") == true, "\(String(describing: off))")
        let file = await loadError { _ = try await session.webSocketTask(with: try ws("/moved-file")).receive() }
        #expect(file?.code == .unsupportedURL, "\(String(describing: file))")
        // Only within the schemes the session lets redirects reach (here none but the request's own).
        let narrow = try Nginx.session { $0.redirectSchemes = [] }
        let upgrade = await loadError { _ = try await narrow.webSocketTask(with: try ws("/moved-secure-cookie")).receive() }
        #expect(upgrade?.code == .unsupportedURL, "\(String(describing: upgrade))")
        let sameScheme = narrow.webSocketTask(with: try ws("/moved-http"))
        try await sameScheme.send(.string("ws to ws"))
        #expect(try await sameScheme.receive() == .string("ws to ws"))
        sameScheme.cancel()
    }

    @Test("A redirected handshake keeps the session's and request's cookies on its origin and drops them on another; other fields go on")
    func redirectsAcrossOrigins() async throws {
        let session = try Nginx.session {
            $0.additionalHeaderFields[.cookie] = "app=1"
            $0.additionalHeaderFields[HTTPField.Name("X-Greeting")!] = "hello"
        }
        let same = session.webSocketTask(with: try ws("/moved-cookie"))
        #expect(try await same.receive() == .string("app=1"))
        #expect(try await same.receive() == .string("hello"))
        same.cancel()
        let other = session.webSocketTask(with: try ws("/moved-secure-cookie"))
        #expect(try await other.receive() == .string(""))
        #expect(try await other.receive() == .string("hello"))
        #expect(other.response?.url.host() == "localhost")
        other.cancel()

        var request = LoadRequest(url: try ws("/moved-secure-cookie"))
        request.headerFields[.cookie] = "own=2"
        let own = try Nginx.session().webSocketTask(with: request)
        #expect(try await own.receive() == .string(""))
        own.cancel()
    }

    @Test("A proxy's 407 to the tunnel is answered by the session's delegate, as for a load; unanswered, the opening fails naming it")
    func proxyChallengeAnswered() async throws {
        final class ProxyLogin: LoaderSessionDelegate {
            let asked = Locked<[String]>([])
            func session(_ session: LoaderSession, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
                asked.withLock { $0.append("\(challenge.protectionSpace.isProxy) \(challenge.previousFailureCount)") }
                return .useCredential(Credential(user: "user", password: "secret"))
            }
        }
        let proxies = try #require(TestServers.proxies, "the proxies could not be started by scripts/test-servers")
        let proxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.authPort)
        let url = URL(string: "ws://localhost:\(try servers().port)/echo")!
        let login = ProxyLogin()
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
        let session = LoaderSession(configuration: configuration, delegate: login)
        let socket = session.webSocketTask(with: url)
        try await socket.send(.string("through the login"))
        #expect(try await socket.receive() == .string("through the login"))
        socket.cancel()
        #expect(login.asked.withLock { $0 } == ["true 0"])

        let unanswered = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy }.webSocketTask(with: url)
        let error = await loadError { try await unanswered.send(.string("no login")) }
        #expect(error?.code == .userAuthenticationRequired && error?.url == url, "\(String(describing: error))")
    }

    @Test("Through the SOCKS5, the SOCKS4, the HTTP and the HTTPS proxy, ws goes through a tunnel")
    func proxied() async throws {
        let proxies = try #require(TestServers.proxies, "the proxies could not be started by scripts/test-servers")
        for proxy in [HTTPClientOptions.Proxy(.socks5, host: "127.0.0.1", port: proxies.socksPort),
                      try #require(HTTPClientOptions.Proxy("socks4://127.0.0.1:\(proxies.socksPort)")),
                      HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.port),
                      try #require(HTTPClientOptions.Proxy("https://localhost:\(proxies.tlsPort)"))] {
            let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy }
            let socket = session.webSocketTask(with: URL(string: "ws://localhost:\(try servers().port)/echo")!)
            let label = "via \(proxy.kind)\(proxy.usesTLS ? " over TLS" : "")"
            try await socket.send(.string(label))
            #expect(try await socket.receive() == .string(label))
            socket.cancel()
        }
    }
}
