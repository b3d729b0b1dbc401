import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// Decides server-trust challenges with a rule, recording each challenge.
private final class TrustDecider: LoaderSessionDelegate {
    let decide: @Sendable (ServerTrust) -> ChallengeDisposition
    let seen = Locked<[AuthenticationChallenge]>([])
    init(_ decide: @escaping @Sendable (ServerTrust) -> ChallengeDisposition) { self.decide = decide }
    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        seen.withLock { $0.append(challenge) }
        guard let trust = challenge.serverTrust else { return .performDefaultHandling }
        return decide(trust)
    }
    var trusts: [ServerTrust] { seen.withLock { $0.compactMap(\.serverTrust) } }
}

/// A session with no extra trust roots: the test CA is unknown to it.
private func untrustingSession(delegate: (any LoaderSessionDelegate)? = nil) -> LoaderSession {
    plainHTTPSession(delegate: delegate)
}

@Suite("https: the server-trust challenge (accept, refuse, pin) against nginx")
struct HTTPServerTrustTests {
    private var serverDER: Data {
        get throws { try derOfPEM(URL(fileURLWithPath: try Nginx.require().caFile).deletingLastPathComponent().appendingPathComponent("server.pem").path) }
    }

    @Test("A trusted server is still put to the delegate, with its certificate; pinning that certificate loads")
    func pinnedMatch() async throws {
        let pinned = try serverDER
        let decider = TrustDecider { $0.certificates.first == pinned ? .performDefaultHandling : .rejectProtectionSpace }
        let (data, response) = try await Nginx.session().data(from: Nginx.https("/hello.txt"), delegate: decider)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        let trust = try #require(decider.trusts.first)
        #expect(trust.host == "localhost")
        #expect(trust.defaultEvaluationError == nil)
        #expect(decider.seen.withLock { $0.first?.protectionSpace.authenticationMethod } == ServerTrust.authenticationMethod)
    }

    @Test("A pin that does not match refuses a server the default rules trust")
    func pinnedMismatch() async throws {
        let otherPin = try derOfPEM(try Nginx.require().caFile)
        let decider = TrustDecider { $0.certificates.first == otherPin ? .performDefaultHandling : .rejectProtectionSpace }
        let url = try Nginx.https("/hello.txt")
        let error = await loadError { _ = try await Nginx.session().data(from: url, delegate: decider) }
        #expect(error?.code == .serverCertificateUntrusted)
        #expect(error?.url == url)
        #expect(error?.description.contains("delegate refused") == true)
    }

    @Test("A delegate can trust a server whose CA is unknown; it is told why the default rules refuse")
    func acceptUntrusted() async throws {
        let decider = TrustDecider { _ in .trustServer }
        let (data, _) = try await untrustingSession().data(from: Nginx.https("/hello.txt"), delegate: decider)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        let trust = try #require(decider.trusts.first)
        #expect(trust.defaultEvaluationError?.code == .serverCertificateUntrusted)
        #expect(trust.certificates.first == (try serverDER), "the chain starts with the server's own certificate")
        #expect(decider.trusts.count == 1, "one question per connection, not another once the delegate has trusted it")
    }

    @Test("The session's delegate answers when the task has none; default handling keeps the refusal")
    func sessionDelegate() async throws {
        let trusting = TrustDecider { _ in .trustServer }
        let (data, _) = try await untrustingSession(delegate: trusting).data(from: Nginx.https("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")

        let passive = TrustDecider { _ in .performDefaultHandling }
        let error = await loadError { _ = try await untrustingSession(delegate: passive).data(from: Nginx.https("/hello.txt")) }
        #expect(error?.code == .serverCertificateUntrusted)
        #expect(passive.trusts.count == 1)
    }

    @Test("An expired certificate: the delegate sees the bad date and may accept it")
    func acceptExpired() async throws {
        let url = URL(string: "https://localhost:\(try Nginx.require().expiredPort)/hello.txt")!
        let decider = TrustDecider { _ in .trustServer }
        let (data, _) = try await Nginx.session().data(from: url, delegate: decider)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(decider.trusts.first?.defaultEvaluationError?.code == .serverCertificateHasBadDate)
        #expect(decider.trusts.first?.defaultEvaluationError?.description.contains("2020-02-01") == true)
    }

    @Test("A certificate for another host can be accepted by the delegate (the host check is its call)")
    func acceptWrongHost() async throws {
        let port = try Nginx.require().httpsPort
        let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].resolve = ["wrong.example:\(port)": "127.0.0.1"] }
        let decider = TrustDecider { _ in .trustServer }
        let (data, _) = try await session.data(from: Nginx.https("/hello.txt", host: "wrong.example"), delegate: decider)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(decider.trusts.first?.defaultEvaluationError?.code == .serverCertificateWrongHost)
    }

    @Test("Cancelling the challenge ends the load cancelled")
    func cancel() async throws {
        let decider = TrustDecider { _ in .cancelAuthenticationChallenge }
        let url = try Nginx.https("/hello.txt")
        let error = await loadError { _ = try await untrustingSession().data(from: url, delegate: decider) }
        #expect(error?.code == .cancelled)
        #expect(error?.url == url)
    }
}
