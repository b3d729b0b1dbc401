import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

/// Answers each session-level challenge with what `answer` gives for it, recording them all.
private final class SessionChallengeRecorder: LoaderSessionDelegate {
    let answer: @Sendable (AuthenticationChallenge) -> ChallengeDisposition
    let seen = Locked<[AuthenticationChallenge]>([])
    init(_ answer: @escaping @Sendable (AuthenticationChallenge) -> ChallengeDisposition) { self.answer = answer }
    func session(_ session: LoaderSession, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        seen.withLock { $0.append(challenge) }
        return answer(challenge)
    }
}

/// A `401` to a WebSocket handshake, answered as an HTTP load's is (scripts/ws-server.py's `/auth-*` paths: the user
/// `wsuser`, password `wspass`, realm `sockets`).
@Suite("ws: a handshake's 401 is answered with Basic or Digest credentials")
struct WebSocketAuthenticationTests {
    private let right = Credential(user: "wsuser", password: "wspass")

    private func port() throws -> Int {
        try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers").port
    }

    private func ws(_ path: String, user: String? = nil) throws -> URL {
        URL(string: "ws://\(user.map { $0 + "@" } ?? "")127.0.0.1:\(try port())\(path)")!
    }

    /// Opens `url` in `session` and checks the server's welcome and an echo: the handshake's credential was taken.
    private func expectOpens(_ url: URL, in session: LoaderSession, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let socket = session.webSocketTask(with: url)
        defer { socket.cancel() }
        #expect(try await socket.receive() == .string("welcome"), sourceLocation: sourceLocation)
        try await socket.send(.string("signed in"))
        #expect(try await socket.receive() == .string("signed in"), sourceLocation: sourceLocation)
        #expect(socket.response?.status?.code == 101, sourceLocation: sourceLocation)
    }

    @Test("By default the URL's user info answers Basic and Digest challenges, then the credential store")
    func defaultHandling() async throws {
        let session = try Nginx.session()
        try await expectOpens(try ws("/auth-basic", user: "wsuser:wspass"), in: session)
        try await expectOpens(try ws("/auth-digest", user: "wsuser:wspass"), in: session)

        // The store holds it for the HTTP server the handshake goes to (http: for ws:).
        let store = CredentialStore()
        for method in ["Basic", "Digest"] {
            store.set(right, for: ProtectionSpace(host: "127.0.0.1", port: try port(), scheme: "http", realm: "sockets", authenticationMethod: method))
        }
        let stored = try Nginx.session { $0.credentialStore = store }
        try await expectOpens(try ws("/auth-basic"), in: stored)
        try await expectOpens(try ws("/auth-digest"), in: stored)
        // A wrong user info gives way to the store.
        try await expectOpens(try ws("/auth-basic", user: "wsuser:wrong"), in: stored)
    }

    @Test("Without a credential the server takes, or with only a Bearer challenge, the opening fails as needing one, naming the URL")
    func unanswered() async throws {
        for url in [try ws("/auth-basic"), try ws("/auth-basic", user: "wsuser:wrong"), try ws("/auth-bearer", user: "wsuser:wspass")] {
            let error = await loadError { _ = try await Nginx.session().webSocketTask(with: url).receive() }
            #expect(error?.code == .userAuthenticationRequired, "\(url): \(String(describing: error))")
            #expect(error?.url == url)
            #expect(error?.reason?.contains("401") == true, "\(String(describing: error))")
        }
    }

    @Test("The session delegate is asked first: its credential opens the socket, a wrong one is asked about three times, a cancel fails")
    func delegate() async throws {
        let url = try ws("/auth-basic")
        let giving = SessionChallengeRecorder { [right] _ in .useCredential(right) }
        try await expectOpens(url, in: plainHTTPSession(delegate: giving))
        let asked = giving.seen.withLock { $0 }
        #expect(asked.count == 1)
        #expect(asked.first?.protectionSpace.authenticationMethod == "Basic")
        #expect(asked.first?.protectionSpace.realm == "sockets")
        #expect(asked.first?.protectionSpace.scheme == "http")
        #expect(asked.first?.previousFailureCount == 0)
        #expect(asked.first?.failureResponse?.status?.code == 401)

        let wrong = Credential(user: "wsuser", password: "nope")
        let insisting = SessionChallengeRecorder { _ in .useCredential(wrong) }
        let refused = await loadError { _ = try await plainHTTPSession(delegate: insisting).webSocketTask(with: url).receive() }
        #expect(refused?.code == .userAuthenticationRequired, "\(String(describing: refused))")
        let tries = insisting.seen.withLock { $0 }
        #expect(tries.map(\.previousFailureCount) == [0, 1, 2])
        #expect(tries.last?.proposedCredential == wrong)

        let cancelling = SessionChallengeRecorder { _ in .cancelAuthenticationChallenge }
        let cancelled = await loadError { _ = try await plainHTTPSession(delegate: cancelling).webSocketTask(with: url).receive() }
        #expect(cancelled?.code == .userCancelledAuthentication && cancelled?.url == url, "\(String(describing: cancelled))")

        // Default handling from the delegate goes on to the URL's user info.
        let deferring = SessionChallengeRecorder { _ in .performDefaultHandling }
        try await expectOpens(try ws("/auth-digest", user: "wsuser:wspass"), in: plainHTTPSession(delegate: deferring))
        #expect(deferring.seen.withLock { $0.first?.protectionSpace.authenticationMethod } == "Digest")
    }

    @Test("The answer to a 401 goes with that hop alone: a redirect after it, on the same origin, starts without it")
    func answerNotCarriedAcrossARedirect() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/auth-moved", user: "wsuser:wspass"))
        defer { socket.cancel() }
        #expect(try await socket.receive() == .string(""))
        #expect(socket.response?.url.path() == "/authorization")
    }

    @Test("The cookies a 401 sets are kept and go with the next try (which the server wants with the credential)")
    func cookieOfTheChallenge() async throws {
        let recorder = RecordingReplayCookieStore(sending: "tried=1")
        try await expectOpens(try ws("/auth-cookie", user: "wsuser:wspass"), in: try Nginx.session { $0.cookieStore = recorder })
        #expect(recorder.saved.withLock { $0 } == ["tried=1; Path=/"])
        // Without a cookie store the cookie is not sent, and the credential alone is refused.
        let refused = await loadError { _ = try await Nginx.session { $0.cookieStore = nil }.webSocketTask(with: try ws("/auth-cookie", user: "wsuser:wspass")).receive() }
        #expect(refused?.code == .userAuthenticationRequired, "\(String(describing: refused))")
    }

    @Test("A Basic credential the session's loads saw the server accept goes ahead with a handshake below the same directory, as with a load")
    func keptCredentialSentAhead() async throws {
        let session = try Nginx.session()
        let page = URL(string: "http://wsuser:wspass@127.0.0.1:\(try port())/auth-page")!
        // From the URL's user info a credential is not kept: from the store it is.
        let store = CredentialStore()
        store.set(right, for: ProtectionSpace(host: "127.0.0.1", port: try port(), scheme: "http", realm: "sockets", authenticationMethod: "Basic"))
        let keeping = try Nginx.session { $0.credentialStore = store }
        let (body, response) = try await keeping.data(from: URL(string: "http://127.0.0.1:\(try port())/auth-page")!)
        #expect(response.status == .ok && String(decoding: body, as: UTF8.self) == "page")
        // /authorization answers the handshake's Authorization field and challenges nothing: the credential went unasked.
        let ahead = keeping.webSocketTask(with: try ws("/authorization"))
        defer { ahead.cancel() }
        #expect(try await ahead.receive() == .string("Basic d3N1c2VyOndzcGFzcw=="))
        // A session whose loads kept none sends none.
        _ = try await session.data(from: page)
        let none = session.webSocketTask(with: try ws("/authorization"))
        defer { none.cancel() }
        #expect(try await none.receive() == .string(""))
    }
}
