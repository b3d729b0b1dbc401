import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// The lighttpd that `scripts/test-servers` runs, asking for Digest authentication.
private enum Lighttpd {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String { "lighttpd could not be started by scripts/test-servers (see its output)" }
    }

    static func port() throws -> Int {
        guard let lighttpd = TestServers.lighttpd else { throw Unavailable() }
        return lighttpd.digestPort
    }

    static func url(_ path: String, user: String? = nil) throws -> URL {
        URL(string: "http://\(user.map { $0 + "@" } ?? "")127.0.0.1:\(try port())\(path)")!
    }
}

@Suite("http: Digest authentication against lighttpd (RFC 7616)")
struct HTTPDigestAuthenticationTests {
    private let good = Credential(user: "user", password: "secret")

    @Test("An MD5 challenge is answered with the URL's user info")
    func md5FromUserInfo() async throws {
        let (data, response) = try await plainHTTPSession().data(from: Lighttpd.url("/digest/hello.txt", user: "user:secret"))
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from lighttpd\n")
    }

    @Test("A SHA-256 challenge goes to the delegate as a Digest protection space with lighttpd's realm")
    func sha256FromDelegate() async throws {
        let answerer = ChallengeAnswerer([.useCredential(good)])
        let (data, response) = try await plainHTTPSession().data(from: Lighttpd.url("/digest-sha256/hello.txt"), delegate: answerer)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from lighttpd\n")
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.first?.protectionSpace.authenticationMethod == "Digest")
        #expect(seen.first?.protectionSpace.realm == "loader digest")
    }

    @Test("The answer's uri is the request target with its query, as lighttpd checks it")
    func targetWithQuery() async throws {
        let url = try Lighttpd.url("/digest/hello.txt?a=1&b=%20x", user: "user:secret")
        let (_, response) = try await plainHTTPSession().data(from: url)
        #expect(response.status == .ok)
    }

    @Test("A wrong password is refused each time: after the attempt limit the 401 reaches the caller")
    func wrongPassword() async throws {
        let wrong = ChallengeDisposition.useCredential(Credential(user: "user", password: "nope"))
        let answerer = ChallengeAnswerer(Array(repeating: wrong, count: 10))
        let (_, response) = try await plainHTTPSession().data(from: Lighttpd.url("/digest-sha256/hello.txt"), delegate: answerer)
        #expect(response.status == .unauthorized)
        #expect(answerer.seen.withLock { $0.map(\.previousFailureCount) } == [0, 1, 2])
    }

    @Test("Default handling finds a credential stored for the Digest protection space")
    func storedCredential() async throws {
        let store = CredentialStore()
        store.set(good, for: ProtectionSpace(host: "127.0.0.1", port: try Lighttpd.port(), scheme: "http", realm: "loader digest",
                                             authenticationMethod: "Digest"))
        let session = plainHTTPSession { $0.credentialStore = store }
        let (_, response) = try await session.data(from: Lighttpd.url("/digest/hello.txt"))
        #expect(response.status == .ok)
    }
}

@Suite("http: Digest challenges a scripted server makes (an in-process NIO server)")
struct HTTPDigestScriptedTests {
    @Test("A stale nonce is answered again with the new one and the same credential, without asking the delegate again")
    func staleNonce() async throws {
        let answerer = ChallengeAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        let (data, response) = try await plainHTTPSession().data(from: ScriptedServer.shared.url("/digest-stale"), delegate: answerer)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "welcome after stale")
        #expect(answerer.seen.withLock { $0.count } == 1)
    }

    @Test("A server that calls every answer stale gets the credential twice more, then the delegate is asked again; its refusal ends with the 401")
    func alwaysStale() async throws {
        let answerer = ChallengeAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        let (_, response) = try await plainHTTPSession().data(from: ScriptedServer.shared.url("/digest-always-stale"), delegate: answerer)
        #expect(response.status == .unauthorized)
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.map(\.previousFailureCount) == [0, 1])
        #expect(seen.last?.proposedCredential?.user == "u")
    }

    @Test("Offered both, a credential stored for Basic alone answers Basic: Digest, with none, gives way")
    func storedBasicAmongBoth() async throws {
        let url = ScriptedServer.shared.url("/basic-or-digest")
        let store = CredentialStore()
        store.set(Credential(user: "u", password: "p"),
                  for: ProtectionSpace(host: url.host!, port: url.port!, scheme: "http", realm: "both", authenticationMethod: "Basic"))
        let (data, response) = try await plainHTTPSession { $0.credentialStore = store }.data(from: url)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "welcome Basic")
    }

    @Test("Offered Basic and Digest, the loader answers Digest")
    func digestOverBasic() async throws {
        let answerer = ChallengeAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        let (data, response) = try await plainHTTPSession().data(from: ScriptedServer.shared.url("/basic-or-digest"), delegate: answerer)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "welcome Digest")
        #expect(answerer.seen.withLock { $0.first?.protectionSpace.authenticationMethod } == "Digest")
    }
}
