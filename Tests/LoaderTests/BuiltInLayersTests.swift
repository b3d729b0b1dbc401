import Foundation
import HTTPTypes
import Loader
import TestSupport
import Testing

/// `layered://start/<id>` redirects to `layered://vault/<id>`, which challenges a request without
/// credentials (401, Basic) and answers `u:p` with a gzip body. `layered://gate/<id>` challenges too, and
/// answers `u:p` with a redirect to the vault. Every request is logged.
final class LayeredHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["layered"] }
    static let seen = Locked<[String: [String]]>([:])
    static let body = Data((0..<5_000).map { "row \($0) of the vault\n" }.joined().utf8)

    override func load() async throws {
        let id = String(request.url.path.dropFirst())
        let authorization = request.headerFields[.authorization] ?? "-"
        let acceptEncoding = request.headerFields[.acceptEncoding] ?? "-"
        Self.seen.withLock { $0[id, default: []].append("\(request.url.host ?? "") \(authorization) \(acceptEncoding)") }
        var fields = HTTPFields()
        switch (request.url.host, authorization) {
        case ("start", _):
            fields[.location] = "layered://vault/\(id)"
            client.handler(self, didReceive: LoadResponse(url: request.url, status: .found, headerFields: fields))
        case ("gate", "Basic dTpw"):
            fields[.location] = "layered://vault/\(id)"
            client.handler(self, didReceive: LoadResponse(url: request.url, status: .found, headerFields: fields))
        case ("vault", "Basic dTpw"):
            fields[.contentEncoding] = "gzip"
            client.handler(self, didReceive: LoadResponse(url: request.url, status: .ok, headerFields: fields))
            try await client.handler(self, deliver: Compression.compress(Self.body, .gzip))
        default:
            fields[.wwwAuthenticate] = "Basic realm=\"\(request.url.host ?? "")\""
            client.handler(self, didReceive: LoadResponse(url: request.url, status: .unauthorized, headerFields: fields))
            try await client.handler(self, deliver: Data("denied".utf8))
        }
    }
}

@Suite("The built-in layers together: redirects, then a challenge, then content decoding")
struct BuiltInLayersTests {
    private func session() -> LoaderSession {
        let store = CredentialStore()
        for host in ["gate", "vault"] {
            store.set(Credential(user: "u", password: "p"),
                      for: ProtectionSpace(host: host, port: 80, scheme: "layered", realm: host, authenticationMethod: "Basic"))
        }
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [LayeredHandler.self]
        configuration.credentialStore = store
        return LoaderSession(configuration: configuration)
    }

    /// Two routes to the vault's gzip body: a redirect to a challenge (`start`), and a challenge answered with
    /// a redirect (`gate`), which the fused layers take as a second layer's further work after the first's.
    /// On the way to another host the credential is dropped, then asked for and given again.
    @Test("A redirect and a challenge, in either order, end decoded at the vault, each request asking for gzip",
          arguments: [("start", ["start - gzip, deflate, br, zstd"]),
                      ("gate", ["gate - gzip, deflate, br, zstd", "gate Basic dTpw gzip, deflate, br, zstd"])])
    func allLayers(entry: String, before: [String]) async throws {
        let id = "l" + UUID().uuidString.prefix(8).lowercased()
        let (data, response) = try await session().data(from: URL(string: "layered://\(entry)/\(id)")!)
        #expect(response.status == .ok)
        #expect(response.url.absoluteString == "layered://vault/\(id)")
        #expect(response.headerFields[.contentEncoding] == nil)
        #expect(Bytes.difference(data, LayeredHandler.body) == nil)
        #expect(LayeredHandler.seen.withLock { $0[id] } == before + ["vault - gzip, deflate, br, zstd", "vault Basic dTpw gzip, deflate, br, zstd"])
    }

    @Test("Cancelling a load while its delegate ponders a challenge or a redirect ends it cancelled at once; the late answer is ignored",
          arguments: ["vault", "start"])
    func cancelWhileDelegateAnswers(entry: String) async throws {
        /// Never answers of itself (a prompt nobody answers): it waits, deaf to cancellation, for `release`.
        final class Pondering: LoadTaskDelegate {
            let asked = Locked(false)
            let responses = Locked(0)
            let release = Locked<CheckedContinuation<Void, Never>?>(nil)
            private func ponder() async {
                asked.withLock { $0 = true }
                await withCheckedContinuation { waiter in release.withLock { $0 = waiter } }
            }
            func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
                await ponder()
                return .rejectProtectionSpace
            }
            func loadTask(_ task: LoadTask, willPerformRedirection response: LoadResponse, newRequest request: LoadRequest) async -> LoadRequest? {
                await ponder()
                return nil
            }
            func loadTask(_ task: LoadTask, didReceive response: LoadResponse) { responses.withLock { $0 += 1 } }
        }
        let delegate = Pondering()
        let session = session()
        let url = URL(string: "layered://\(entry)/c\(UUID().uuidString.prefix(8).lowercased())")!
        let load = Task { try await session.data(from: url, delegate: delegate) }
        // Bounded: the delegate is asked within 10 s.
        for _ in 0..<1000 where !delegate.asked.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        try #require(delegate.asked.withLock { $0 })
        load.cancel()
        // Bounded: if the cancel did not end the wait, the delegate answers after 5 s and the checks below fail.
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(5))
            guard !Task.isCancelled else { return false }
            return delegate.release.withLock { $0.take() }.map { $0.resume(); return true } ?? false
        }
        let outcome = await load.result
        watchdog.cancel()
        #expect(await watchdog.value == false, "the load waited for the delegate's answer after the cancel")
        #expect(throws: LoadError.self) { try outcome.get() }
        #expect((try? outcome.get()) == nil)
        if case .failure(let error as LoadError) = outcome { #expect(error.code == .cancelled) }
        // The late answer changes nothing: no response is reported after the cancel.
        delegate.release.withLock { $0.take() }?.resume()
        try await Task.sleep(for: .milliseconds(100))
        #expect(delegate.responses.withLock { $0 } == 0)
    }

    @Test("Default handling tries the URL's user info, then the credential store once, each at most once")
    func userInfoThenStore() async throws {
        let id = "l" + UUID().uuidString.prefix(8).lowercased()
        let (data, response) = try await session().data(from: URL(string: "layered://x:y@vault/\(id)")!)
        #expect(response.status == .ok)
        #expect(Bytes.difference(data, LayeredHandler.body) == nil)
        // Without credentials, then x:y from the URL (refused), then u:p from the store.
        #expect(LayeredHandler.seen.withLock { $0[id] } == ["vault - gzip, deflate, br, zstd", "vault Basic eDp5 gzip, deflate, br, zstd", "vault Basic dTpw gzip, deflate, br, zstd"])
    }

    @Test("A caller's own Accept-Encoding goes through every hop, and the bytes come as sent")
    func ownAcceptEncoding() async throws {
        let id = "l" + UUID().uuidString.prefix(8).lowercased()
        var request = LoadRequest(url: URL(string: "layered://start/\(id)")!)
        request.headerFields[.acceptEncoding] = "gzip"
        let (data, response) = try await session().data(for: request)
        #expect(response.headerFields[.contentEncoding] == "gzip")
        #expect(Bytes.difference(data, Compression.compress(LayeredHandler.body, .gzip)) == nil, "the compressed bytes, untouched")
        #expect(LayeredHandler.seen.withLock { $0[id] } == ["start - gzip", "vault - gzip", "vault Basic dTpw gzip"])
    }

    @Test("With nobody to answer, the challenge's own body reaches the caller after the redirect")
    func unanswered() async throws {
        let id = "l" + UUID().uuidString.prefix(8).lowercased()
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [LayeredHandler.self]
        let (data, response) = try await LoaderSession(configuration: configuration).data(from: URL(string: "layered://start/\(id)")!)
        #expect(response.status == .unauthorized)
        #expect(String(decoding: data, as: UTF8.self) == "denied")
        #expect(LayeredHandler.seen.withLock { $0[id] }?.count == 2)
    }
}
