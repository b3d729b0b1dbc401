import FoundationEssentials
import Loader
import Synchronization

/// An HTTP proxy's demand for credentials that the handler may answer: a `407` whose `Proxy-Authenticate`
/// offers `Basic`, to a `CONNECT` or to a request sent through the proxy. It travels as the underlying error of
/// a ``LoadError`` (``LoadError/Code/userAuthenticationRequired``; within a ``ProxyTunnelRefused`` for a `CONNECT`)
/// from where the 407 is read to the handler's `load()`, which asks the task's and session's delegates.
struct ProxyChallenge: Error, Sendable {
    /// The realm the proxy named.
    let realm: String?

    /// The challenge among `fieldValues` (each a `Proxy-Authenticate` value) that the handler answers; `nil`
    /// when none offers `Basic` (a proxy asking only for `Digest`, `Negotiate` or `NTLM`).
    init?(fieldValues: [String]) {
        guard let basic = AuthenticationChallengeList(fieldValues.joined(separator: ", ")).first(scheme: "basic") else { return nil }
        realm = basic.parameters["realm"]
    }

    /// The challenge `error` carries: its underlying error, or a refused tunnel's.
    static func carried(by error: LoadError) -> ProxyChallenge? {
        error.underlying as? ProxyChallenge ?? (error.underlying as? ProxyTunnelRefused)?.challenge
    }

    /// The challenge's protection space at `proxy`: `proxyType` `"https"` for an HTTPS proxy, as URLSession names it.
    func space(at proxy: HTTPClientOptions.Proxy) -> ProtectionSpace {
        ProtectionSpace(proxyHost: proxy.host, port: proxy.port, proxyType: proxy.usesTLS ? "https" : "http", realm: realm,
                        authenticationMethod: "Basic")
    }

    /// The credential a delegate's `disposition` gives for this challenge: the one it gave, or `nil` (default handling,
    /// which the caller may answer from a store, or a refusal). Throws ``LoadError/Code/userCancelledAuthentication``,
    /// naming `url` and `proxy`, when the delegate cancelled the challenge.
    func credential(from disposition: ChallengeDisposition, at proxy: HTTPClientOptions.Proxy, url: URL) throws -> Credential? {
        switch disposition {
        case .useCredential(let given):
            return given
        case .cancelAuthenticationChallenge:
            throw LoadError(.userCancelledAuthentication, url: url,
                            reason: "the delegate cancelled the challenge of the proxy \(HTTPClientOptions.Proxy.authority(proxy.host, proxy.port))")
        case .performDefaultHandling, .rejectProtectionSpace, .trustServer:
            return nil
        }
    }

}

/// The proxy credentials each session's delegates gave, by proxy: later requests of that session through the
/// same proxy send them at once rather than meeting the 407 again, as URLSession keeps a proxy's credential for
/// the session.
final class ProxyCredentials: Sendable {
    private struct Key: Hashable {
        var session: Int
        var host: String
        var port: Int
    }

    private let given = Locked<[Key: Credential]>([:])
    /// Read without the lock on every request through a proxy: most sessions never answer a proxy.
    private let isEmpty = Atomic<Bool>(true)

    /// The credential `session`'s delegates gave for `proxy`, if any.
    func credential(session: Int, proxy: HTTPClientOptions.Proxy) -> Credential? {
        guard !isEmpty.load(ordering: .relaxed) else { return nil }
        return given.withLock { $0[Key(session: session, host: proxy.host, port: proxy.port)] }
    }

    /// Keeps `credential` for `session`'s requests through `proxy`.
    func set(_ credential: Credential, session: Int, proxy: HTTPClientOptions.Proxy) {
        given.withLock { given in
            given[Key(session: session, host: proxy.host, port: proxy.port)] = credential
            isEmpty.store(given.isEmpty, ordering: .relaxed)
        }
    }

    /// Forgets `credential` for `session`'s requests through `proxy` (the proxy refused it), if it is the one kept.
    func forget(_ credential: Credential, session: Int, proxy: HTTPClientOptions.Proxy) {
        given.withLock { given in
            let key = Key(session: session, host: proxy.host, port: proxy.port)
            guard given[key] == credential else { return }
            given[key] = nil
            isEmpty.store(given.isEmpty, ordering: .relaxed)
        }
    }

    /// Forgets what `session` was given, when it ends.
    func forget(session: Int) {
        given.withLock { given in
            given = given.filter { $0.key.session != session }
            isEmpty.store(given.isEmpty, ordering: .relaxed)
        }
    }
}
