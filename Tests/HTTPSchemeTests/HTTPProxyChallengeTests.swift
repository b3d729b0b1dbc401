import Foundation
import HTTPTypes
import Loader
import TestSupport
import Testing
@testable import HTTPScheme

/// Answers proxies' challenges from a script, recording them; past the script it rejects the space. Any other
/// challenge (the TLS server's trust) gets default handling.
private final class ProxyAnswerer: LoadTaskDelegate {
    let answers: [ChallengeDisposition]
    let seen = Locked<[AuthenticationChallenge]>([])
    init(_ answers: [ChallengeDisposition]) { self.answers = answers }
    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        guard challenge.protectionSpace.isProxy else { return .performDefaultHandling }
        let index = seen.withLock { seen -> Int in
            seen.append(challenge)
            return seen.count - 1
        }
        return index < answers.count ? answers[index] : .rejectProtectionSpace
    }
}

/// A proxy's 407 answered through the delegates and the credential store: against the real tinyproxy that asks
/// for user/secret (scripts/test-servers) in front of the real nginx, and against the scripted server acting as
/// a forward proxy (tinyproxy answers a wrong credential with a 401 and `WWW-Authenticate`, not the 407 RFC 9110
/// asks for; a 401 to `CONNECT` can only be the proxy's, so the tunnel takes it as the proxy's challenge).
@Suite("http(s): a proxy's challenge (407) is asked about, as a server's 401 is")
struct HTTPProxyChallengeTests {
    private let good = Credential(user: "user", password: "secret")

    /// A session sending http through the scripted server as its proxy (which wants u:p).
    private func scriptedProxySession(_ server: ScriptedServer) -> LoaderSession {
        plainHTTPSession { $0.handlerOptions[HTTPClientOptions.self].httpProxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: server.port) }
    }

    private func proxyPort() throws -> Int {
        try #require(TestServers.proxies, "tinyproxy could not be started by scripts/test-servers").authPort
    }

    /// A session sending http and https through the proxy that asks for credentials, with none configured.
    private func session(store: CredentialStore? = nil) throws -> LoaderSession {
        let proxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: try proxyPort())
        return try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
            $0.handlerOptions[HTTPClientOptions.self].httpsProxy = proxy
            if let store { $0.credentialStore = store }
        }
    }

    @Test("The CONNECT of an https load and an http load sent through the proxy ask about the proxy's space and go through with the answer")
    func answered() async throws {
        let port = try proxyPort()
        for url in [try Nginx.https("/hello.txt"), try Nginx.http("/hello.txt")] {
            let answerer = ProxyAnswerer([.useCredential(good)])
            let (data, response) = try await session().data(from: url, delegate: answerer)
            #expect(response.status == .ok, "\(url)")
            #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n", "\(url)")
            let seen = answerer.seen.withLock { $0 }
            #expect(seen.count == 1, "\(url)")
            let space = try #require(seen.first?.protectionSpace)
            #expect(space.isProxy && space.proxyType == "http", "\(url)")
            #expect(space.host == "127.0.0.1" && space.port == port, "\(url)")
            #expect(space.realm == "Tinyproxy" && space.authenticationMethod == "Basic", "\(url)")
            #expect(seen.first?.previousFailureCount == 0 && seen.first?.proposedCredential == nil, "\(url)")
        }
    }

    @Test("An HTTPS proxy's challenge is asked about as its space of type https, for a tunnel and for a forwarded request")
    func httpsProxyAnswered() async throws {
        let proxies = try #require(TestServers.proxies, "tinyproxy could not be started by scripts/test-servers")
        let proxy = try #require(HTTPClientOptions.Proxy("https://localhost:\(proxies.tlsAuthPort)"))
        for url in [try Nginx.https("/hello.txt"), try Nginx.http("/hello.txt")] {
            // A session each: the credential given is kept for the session's later loads through the proxy.
            let session = try Nginx.session {
                $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
                $0.handlerOptions[HTTPClientOptions.self].httpsProxy = proxy
            }
            let answerer = ProxyAnswerer([.useCredential(good)])
            let (data, response) = try await session.data(from: url, delegate: answerer)
            #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "Hello from nginx\n", "\(url)")
            let space = try #require(answerer.seen.withLock { $0.first?.protectionSpace }, "\(url): not asked")
            #expect(space.isProxy && space.proxyType == "https" && space.host == "localhost" && space.port == proxies.tlsAuthPort, "\(url)")
        }
    }

    @Test("A wrong answer is asked about again with its failure counted and proposed; the right one then goes through")
    func wrongThenRight() async throws {
        let wrong = Credential(user: "user", password: "nope")
        let tunnel = ProxyAnswerer([.useCredential(wrong), .useCredential(good)])
        let (_, tunnelled) = try await session().data(from: Nginx.https("/hello.txt"), delegate: tunnel)
        #expect(tunnelled.status == .ok)

        let server = try ScriptedServer()
        let forward = ProxyAnswerer([.useCredential(wrong), .useCredential(Credential(user: "u", password: "p"))])
        let target = "http://127.0.0.1:1/a?b=c"
        let (data, forwarded) = try await scriptedProxySession(server).data(from: try #require(URL(string: target)), delegate: forward)
        #expect(forwarded.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "proxied " + target)
        #expect(forward.seen.withLock { $0.first?.protectionSpace.realm } == "scripted proxy")

        for seen in [tunnel.seen.withLock { $0 }, forward.seen.withLock { $0 }] {
            #expect(seen.map(\.previousFailureCount) == [0, 1])
            #expect(seen.map(\.proposedCredential) == [nil, wrong])
        }
    }

    @Test("A POST whose body can go again is answered and sent again; a request's own Proxy-Authorization is left to meet the 407")
    func bodiesAndOwnFields() async throws {
        let server = try ScriptedServer()
        let session = scriptedProxySession(server)
        let target = try #require(URL(string: "http://127.0.0.1:1/form"))
        let answerer = ProxyAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        let (data, posted) = try await session.upload(for: LoadRequest(url: target, method: .post), from: Data("a=1".utf8), delegate: answerer)
        #expect(posted.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "proxied http://127.0.0.1:1/form")
        #expect(answerer.seen.withLock { $0.count } == 1)

        var own = LoadRequest(url: target)
        own.headerFields[.proxyAuthorization] = "Basic " + Data("u:wrong".utf8).base64EncodedString()
        let unasked = ProxyAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        let (_, denied) = try await scriptedProxySession(server).data(for: own, delegate: unasked)
        #expect(denied.status.map(\.code) == 407)
        #expect(unasked.seen.withLock { $0.isEmpty })
        // So is a login among the proxy's own fields (curl's --proxy-header): the answer would not stand in for it.
        var fielded = HTTPClientOptions.Proxy(host: "127.0.0.1", port: server.port)
        fielded.headerFields[.proxyAuthorization] = "Basic " + Data("u:wrong".utf8).base64EncodedString()
        let fieldSession = plainHTTPSession { $0.handlerOptions[HTTPClientOptions.self].httpProxy = fielded }
        let notAsked = ProxyAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        let (_, refused) = try await fieldSession.data(for: LoadRequest(url: target), delegate: notAsked)
        #expect(refused.status.map(\.code) == 407 && notAsked.seen.withLock { $0.isEmpty }, "\(refused.status.map(\.code) ?? 0)")
    }

    @Test("A load that meets the 407 on a kept connection (without a task of its own) is asked about before it is sent again")
    func onAKeptConnection() async throws {
        let server = try ScriptedServer()
        let session = scriptedProxySession(server)
        let (_, open) = try await session.data(from: try #require(URL(string: "http://127.0.0.1:1/open")))
        #expect(open.status == .ok)
        let answerer = ProxyAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        let (data, response) = try await session.data(from: try #require(URL(string: "http://127.0.0.1:1/secret")), delegate: answerer)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "proxied http://127.0.0.1:1/secret")
        #expect(answerer.seen.withLock { $0.count } == 1)
        // The 407 and the answered request: no send in between.
        #expect(server.secretRequestCount == 2)
        // The kept connection carried the open request and the first try of the secret one.
        #expect(server.acceptedCount == 2)
    }

    @Test("Answers wrong each time end after three questions: with the proxy's 407 for an http load")
    func attemptLimit() async throws {
        let server = try ScriptedServer()
        let wrong = ChallengeDisposition.useCredential(Credential(user: "u", password: "nope"))
        let answerer = ProxyAnswerer(Array(repeating: wrong, count: 10))
        let (data, response) = try await scriptedProxySession(server).data(from: try #require(URL(string: "http://127.0.0.1:1/")), delegate: answerer)
        #expect(response.status.map(\.code) == 407)
        #expect(String(decoding: data, as: UTF8.self) == "credentials, please")
        #expect(answerer.seen.withLock { $0.count } == HTTPSchemeHandler.maximumProxyAttempts)
    }

    @Test("Unanswered, the tunnel's load fails naming the proxy, and an http load gets the proxy's 407 page; cancelling fails the load")
    func unanswered() async throws {
        let port = try proxyPort()
        let secure = try Nginx.https("/hello.txt")
        let refused = await loadError { _ = try await session().data(from: secure, delegate: ProxyAnswerer([.rejectProtectionSpace])) }
        #expect(refused?.code == .userAuthenticationRequired)
        #expect(refused?.url == secure)
        #expect(refused?.reason?.contains("the proxy 127.0.0.1:\(port) refused the tunnel") == true, "\(String(describing: refused))")

        let (page, denied) = try await session().data(from: Nginx.http("/hello.txt"), delegate: ProxyAnswerer([]))
        #expect(denied.status.map(\.code) == 407)
        #expect(denied.headerFields[HTTPField.Name("Proxy-Authenticate")!] == #"Basic realm="Tinyproxy""#)
        #expect(String(decoding: page, as: UTF8.self).contains("Proxy Authentication Required"))

        let cancelled = await loadError {
            _ = try await session().data(from: Nginx.http("/hello.txt"), delegate: ProxyAnswerer([.cancelAuthenticationChallenge]))
        }
        #expect(cancelled?.code == .userCancelledAuthentication)
    }

    @Test("The answer is kept for the session's later loads through that proxy; another session asks again")
    func keptForTheSession() async throws {
        let session = try session()
        let answerer = ProxyAnswerer([.useCredential(good)])
        _ = try await session.data(from: Nginx.https("/hello.txt"), delegate: answerer)
        for url in [try Nginx.https("/300k.bin"), try Nginx.http("/hello.txt")] {
            let later = ProxyAnswerer([])
            let (_, response) = try await session.data(from: url, delegate: later)
            #expect(response.status == .ok, "\(url)")
            #expect(later.seen.withLock { $0.isEmpty }, "\(url)")
        }
        let other = ProxyAnswerer([])
        let (_, elsewhere) = try await self.session().data(from: Nginx.http("/hello.txt"), delegate: other)
        #expect(elsewhere.status.map(\.code) == 407)
        #expect(other.seen.withLock { $0.count } == 1)
    }

    @Test("Default handling finds the proxy's credential in the session's store, and never a server's stored for the same host and port")
    func store() async throws {
        let port = try proxyPort()
        let serverOnly = CredentialStore()
        serverOnly.set(good, for: ProtectionSpace(host: "127.0.0.1", port: port, scheme: "http", realm: "Tinyproxy", authenticationMethod: "Basic"))
        let (_, denied) = try await session(store: serverOnly).data(from: Nginx.http("/hello.txt"))
        #expect(denied.status.map(\.code) == 407)

        let store = CredentialStore()
        store.set(good, for: ProtectionSpace(proxyHost: "127.0.0.1", port: port, realm: "Tinyproxy", authenticationMethod: "Basic"))
        for url in [try Nginx.https("/hello.txt"), try Nginx.http("/hello.txt")] {
            let (data, response) = try await session(store: store).data(from: url)
            #expect(response.status == .ok, "\(url)")
            #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n", "\(url)")
        }
    }
}
