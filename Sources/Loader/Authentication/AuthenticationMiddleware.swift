import FoundationEssentials
import HTTPTypes

/// Answers HTTP `Digest` (RFC 7616) and `Basic` challenges (401 with `WWW-Authenticate`): asks the task's
/// delegate, then the session's, and by default uses the URL's user info, then the session's credential
/// store. When nobody has a credential, or the server refused ``maximumAttempts`` of them, the 401 response
/// goes to the caller: a challenge never makes a load hang.
///
/// A server that offers both gets `Digest`, which keeps the password off the wire (as URLSession and curl's
/// `--anyauth` choose); the protection space's ``ProtectionSpace/authenticationMethod`` says which, `"Digest"`
/// or `"Basic"`. A `Digest` answer the server calls stale (its nonce expired) goes again with the new nonce
/// and the same credential, without asking anyone.
public struct AuthenticationMiddleware: LoadMiddleware {
    /// Credentials tried per load before the 401 is handed to the caller.
    public var maximumAttempts: Int
    let store: CredentialStore?

    /// Makes the middleware.
    /// - Parameters:
    ///   - store: Where default handling looks for credentials, or `nil` for none.
    ///   - maximumAttempts: Credentials tried per load.
    public init(store: CredentialStore?, maximumAttempts: Int = 3) {
        self.store = store
        self.maximumAttempts = maximumAttempts
    }

    /// Loads `request`, answering challenges.
    public func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await loadSplit(request, context: context, next: next)
    }

    /// Answers `first`'s challenge, and any that follow, while the delegate or the store has a credential.
    @inline(never)
    fileprivate func answerChallenges(_ first: LoadResult, to request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        var current = request
        var result = first
        var failures = 0
        var proposed: Credential?
        var userInfoTried = false
        var storeTried = false
        var staleAnswers = 0
        while true {
            guard result.response.status == .unauthorized,
                  let header = result.response.headerFields[.wwwAuthenticate],
                  let (space, offer) = Self.offer(in: header, url: current.url)
            else { return result }
            let credential: Credential?
            if case .digest(let digest) = offer, digest.stale, let proposed, staleAnswers < Self.maximumStaleAnswers {
                // The credential was right and the nonce old: again with the new one (a few times at most, so that
                // a server that calls every nonce stale cannot keep the load going).
                staleAnswers += 1
                credential = proposed
            } else {
                guard failures < maximumAttempts else { return result }
                credential = try await ask(about: space, failures: failures, proposed: proposed, result: result, request: current,
                                           context: context, userInfoTried: &userInfoTried, storeTried: &storeTried)
                failures += credential == nil ? 0 : 1
            }
            guard let credential else { return result }
            result.body.discard()
            if let body = current.body, !body.canBeSentAgain {
                throw body.notSentAgain(to: current.url, for: "answering the 401 challenge for \(space.host)")
            }
            proposed = credential
            current.headerFields[.authorization] = offer.authorization(for: credential, method: current.method.rawValue, url: current.url)
            result = try await next(current)
        }
    }

    /// How many times a load answers a `Digest` challenge marked stale with the credential it has.
    static let maximumStaleAnswers = 2

    /// The credential the delegates or default handling give for `space`, `nil` when none; throws when the
    /// delegate cancels.
    private func ask(about space: ProtectionSpace, failures: Int, proposed: Credential?, result: LoadResult, request current: LoadRequest,
                     context: LoadContext, userInfoTried: inout Bool, storeTried: inout Bool) async throws -> Credential? {
        let challenge = AuthenticationChallenge(protectionSpace: space, previousFailureCount: failures,
                                                proposedCredential: proposed, failureResponse: result.response)
        let credential: Credential?
        let disposition: ChallengeDisposition
        do {
            disposition = try await context.task.didReceive(challenge)
        } catch {
            result.body.discard()
            throw error
        }
        switch disposition {
        case .useCredential(let given):
            credential = given
        case .cancelAuthenticationChallenge:
            result.body.discard()
            throw LoadError(.userCancelledAuthentication, url: current.url, reason: "the delegate cancelled the challenge for \(space.host)")
        case .rejectProtectionSpace, .trustServer:
            credential = nil
        case .performDefaultHandling:
            if !userInfoTried, let user = current.url.user(percentEncoded: false) {
                userInfoTried = true
                credential = Credential(user: user, password: current.url.password(percentEncoded: false) ?? "")
            } else if !storeTried {
                // Once, also after the URL's user info was refused: the store may know better.
                storeTried = true
                credential = store?.credential(for: space)
            } else {
                credential = nil
            }
        }
        return credential
    }

    /// A challenge this middleware answers.
    enum Offer: Equatable {
        case basic
        case digest(DigestChallenge)

        /// The `Authorization` value that answers it for `credential` on a request of `method` to `url`.
        func authorization(for credential: Credential, method: String, url: URL) -> String {
            switch self {
            case .basic:
                return "Basic " + Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
            case .digest(let digest):
                // The request target as the HTTP handler sends it: the path (or `/`) and the query.
                var target = url.path(percentEncoded: true)
                if target.isEmpty { target = "/" }
                if let query = url.query(percentEncoded: true) { target += "?" + query }
                return digest.authorization(for: credential, method: method, uri: target, cnonce: DigestChallenge.makeClientNonce())
            }
        }
    }

    /// The challenge to answer among those `header` lists, and its protection space: the first `Digest` one
    /// this can answer (a server lists them most preferred first, RFC 7616 §3.7), else a `Basic` one; `nil`
    /// when there is neither (a server may offer only `Negotiate` or `Bearer`).
    static func offer(in header: String, url: URL) -> (ProtectionSpace, Offer)? {
        let challenges = AuthenticationChallengeList(header)
        let offer: (realm: String?, Offer)
        if let digest = challenges.challenges.lazy.compactMap(DigestChallenge.init).first {
            offer = (digest.realm, .digest(digest))
        } else if let basic = challenges.first(scheme: "basic") {
            offer = (basic.parameters["realm"], .basic)
        } else {
            return nil
        }
        let scheme = url.scheme?.lowercased() ?? "http"
        let space = ProtectionSpace(host: url.host(percentEncoded: false) ?? "", port: url.port ?? (scheme == "https" ? 443 : 80),
                                    scheme: scheme, realm: offer.realm, authenticationMethod: offer.1 == .basic ? "Basic" : "Digest")
        return (space, offer.1)
    }
}

// Most responses are no challenge. Answering is the further work, so that its larger async frame (the
// challenge, the credential) is allocated only for a 401.
extension AuthenticationMiddleware: BuiltInLayer {
    func needsMore(_ result: LoadResult) -> Bool {
        result.response.status == .unauthorized
    }

    func more(_ result: LoadResult, for request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await answerChallenges(result, to: request, context: context, next: next)
    }
}
