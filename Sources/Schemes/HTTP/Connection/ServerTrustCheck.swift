import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader
import NIOCore
import NIOSSL

/// Puts a TLS server's certificate to the load's delegates (the URLSession server-trust challenge):
/// after a handshake the default rules accepted (the delegate may still refuse — pinning), or in place of
/// the default rules once they refused the server (the delegate may accept — a development server).
final class ServerTrustCheck: Sendable {
    let key: ConnectionPool.Key
    let url: URL
    /// Why the default rules refused the server.
    let defaultError: LoadError
    let ask: ConnectionPool.TrustQuestion?
    private let refused = Locked<LoadError?>(nil)
    /// The question put to the delegates, while it is being asked (set on the event loop, in the handshake).
    private let asking = Locked<Task<Void, Never>?>(nil)

    init(key: ConnectionPool.Key, url: URL, defaultError: LoadError, ask: ConnectionPool.TrustQuestion?) {
        self.key = key
        self.url = url
        self.defaultError = defaultError
        self.ask = ask
    }

    /// Why the server was refused on the delegated attempt, once it was.
    var refusal: LoadError? { refused.withLock { $0 } }

    /// NIOSSL's custom verification callback: runs on the event loop, so the question is asked elsewhere.
    func verify(_ certificates: [NIOSSLCertificate], _ promise: EventLoopPromise<NIOSSLVerificationResult>) {
        let error = Self.refine(defaultError, leaf: certificates.first, url: url)
        let trust = ServerTrust(host: key.host, port: key.port, certificates: certificates.compactMap(Self.der), defaultEvaluationError: error)
        let question = Task {
            let answer = await ask?(Self.challenge(key, trust)) ?? .performDefaultHandling
            switch answer {
            case .trustServer:
                promise.succeed(.certificateVerified)
            case .cancelAuthenticationChallenge:
                refused.withLock { $0 = LoadError(.cancelled, url: url, reason: "the server-trust challenge was cancelled (by the delegate, or with the load)") }
                promise.succeed(.failed)
            case .performDefaultHandling, .rejectProtectionSpace, .useCredential:
                refused.withLock { $0 = error }
                promise.succeed(.failed)
            }
        }
        asking.withLock { $0 = question }
    }

    /// Returns once the question put to the delegates, if any, has its answer: a handshake that failed meanwhile
    /// (the connect timeout passed while the delegate thought) fails the load only after it, so that the handler's
    /// failure report never meets its question (its calls to its client must not overlap). A cancelled load's
    /// question ends at once.
    func settled() async {
        await asking.withLock { $0 }?.value
    }

    /// Asks about a server the default rules accepted, given its leaf certificate as the handshake left
    /// it; throws if the delegate refuses it.
    static func confirm(_ leaf: NIOSSLCertificate?, key: ConnectionPool.Key, url: URL, ask: ConnectionPool.TrustQuestion) async throws {
        let certificates = leaf.flatMap(der).map { [$0] } ?? []
        let trust = ServerTrust(host: key.host, port: key.port, certificates: certificates, defaultEvaluationError: nil)
        switch await ask(challenge(key, trust)) {
        case .cancelAuthenticationChallenge:
            throw LoadError(.cancelled, url: url, reason: "the server-trust challenge was cancelled (by the delegate, or with the load)")
        case .rejectProtectionSpace:
            throw LoadError(.serverCertificateUntrusted, url: url, reason: "the delegate refused the server's certificate")
        case .performDefaultHandling, .trustServer, .useCredential:
            return
        }
    }

    /// An untrusted certificate whose dates do not cover now is reported as a bad date: BoringSSL's
    /// error does not say which rule failed, the certificate does.
    static func refine(_ error: LoadError, leaf: NIOSSLCertificate?, url: URL) -> LoadError {
        guard error.code == .serverCertificateUntrusted, let leaf else { return error }
        let now = time(nil)
        let format = Date.ISO8601FormatStyle().year().month().day()
        if leaf.notValidAfter < now {
            let date = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)).formatted(format)
            return LoadError(.serverCertificateHasBadDate, url: url, reason: "the server's certificate expired on \(date)", underlying: error.underlying)
        }
        if leaf.notValidBefore > now {
            let date = Date(timeIntervalSince1970: TimeInterval(leaf.notValidBefore)).formatted(format)
            return LoadError(.serverCertificateHasBadDate, url: url, reason: "the server's certificate is not valid before \(date)", underlying: error.underlying)
        }
        return error
    }

    private static func challenge(_ key: ConnectionPool.Key, _ trust: ServerTrust) -> AuthenticationChallenge {
        let space = ProtectionSpace(host: key.host, port: key.port, scheme: key.scheme, realm: nil, authenticationMethod: ServerTrust.authenticationMethod)
        return AuthenticationChallenge(protectionSpace: space, serverTrust: trust)
    }

    private static func der(_ certificate: NIOSSLCertificate) -> Data? {
        (try? certificate.toDERBytes()).map { Data($0) }
    }
}
