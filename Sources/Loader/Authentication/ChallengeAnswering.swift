import FoundationEssentials
import HTTPTypes

/// What one load remembers while it answers a server's `Basic` and `Digest` challenges (401 with
/// `WWW-Authenticate`): how many credentials failed, which was last proposed, whether the URL's user info and the
/// credential store were tried, and how often each nonce went. A plain value: ``AuthenticationMiddleware`` keeps one
/// per load, and a WebSocket handshake, which runs outside the chain, keeps its own.
///
/// Each 401 is given to ``answer(to:method:url:ask:)``, which picks the challenge (`Digest` first), asks `ask` (a
/// delegate) and falls back to default handling (the URL's user info, then the store), and returns the
/// `Authorization` value to send again with, or `nil` when nobody has a credential or ``maximumAttempts`` failed.
package struct ChallengeAnswering {
    /// Where a credential came from.
    package enum Source: Sendable {
        case delegate, userInfo, store
    }

    /// An answer to a challenge: the field to send, and what it answers with.
    package struct Answer: Sendable {
        /// The `Authorization` value.
        package let authorization: String
        /// The protection space the challenge named.
        package let space: ProtectionSpace
        /// Whether it answers a `Basic` challenge (else a `Digest` one).
        package let isBasic: Bool
        /// The credential it carries.
        package let credential: Credential
        /// Where that credential came from.
        package let source: Source
    }

    /// Credentials tried before giving up; a kept credential sent ahead and refused is one of them.
    let maximumAttempts: Int
    /// Where default handling looks after the URL's user info.
    let store: CredentialStore?
    /// A kept credential sent ahead unasked that the first 401 refuses: the load's first failure.
    let refused: Credential?

    private var failures: Int
    private var proposed: Credential?
    /// Whether the last answer was a Digest one: only that can have gone with a nonce the server now calls stale.
    private var answeredDigest = false
    private var userInfoTried = false
    /// Per method: a store without a Digest credential may have a Basic one for the same server.
    private var storeTried: Set<String> = []
    private var staleAnswers = 0
    /// How often each nonce has been answered: a server may send a nonce again, and checks that the count grows.
    private var nonceUses: [String: Int] = [:]
    /// Where the credential last answered with came from: the URL's user info is the URL's alone.
    private var source = Source.delegate

    /// How many times a load answers a `Digest` challenge marked stale with the credential it has.
    static let maximumStaleAnswers = 2

    /// - Parameters:
    ///   - store: Where default handling looks for a credential after the URL's user info.
    ///   - maximumAttempts: Credentials tried before giving up.
    ///   - refused: A kept credential sent ahead unasked, which the first 401 refuses.
    package init(store: CredentialStore?, maximumAttempts: Int = AuthenticationMiddleware.defaultMaximumAttempts, refused: Credential? = nil) {
        self.store = store
        self.maximumAttempts = maximumAttempts
        self.refused = refused
        failures = refused == nil ? 0 : 1
        proposed = refused
    }

    /// The answer to `response`, the server's reply to a request of `method` to `url`: `nil` when it is no `Basic` or
    /// `Digest` challenge, nobody has a credential for it, or too many failed. `ask` puts the challenge to the
    /// delegate; throws `userCancelledAuthentication` when it cancels, and what `ask` throws.
    package mutating func answer(to response: LoadResponse, method: String, url: URL,
                                 ask: (AuthenticationChallenge) async throws -> ChallengeDisposition) async throws -> Answer? {
        guard response.status == .unauthorized, let header = response.headerFields[.wwwAuthenticate],
              case let offers = Self.offers(in: header, url: url), let first = offers.first
        else { return nil }
        var chosen: (space: ProtectionSpace, offer: Offer, credential: Credential, source: Source)?
        if case .digest(let digest) = first.offer, digest.stale, answeredDigest, let proposed, staleAnswers < Self.maximumStaleAnswers {
            // The credential was right and the nonce old: again with the new one (a few times at most, so that a
            // server that calls every nonce stale cannot keep the load going).
            staleAnswers += 1
            chosen = (first.space, first.offer, proposed, source)
        } else {
            guard failures < maximumAttempts else { return nil }
            // The strongest first; one nobody has a credential for (or that the delegate refuses) gives way to the
            // next, as URLSession goes on after `rejectProtectionSpace`.
            for (space, offer) in offers {
                if let (credential, from) = try await credential(for: space, response: response, url: url, ask: ask) {
                    chosen = (space, offer, credential, from)
                    break
                }
            }
            failures += 1
        }
        guard let (space, offer, credential, from) = chosen else { return nil }
        proposed = credential
        source = from
        var uses = 1
        answeredDigest = false
        if case .digest(let digest) = offer {
            uses = nonceUses[digest.nonce, default: 0] + 1
            nonceUses[digest.nonce] = uses
            answeredDigest = true
        }
        return Answer(authorization: offer.authorization(for: credential, method: method, url: url, nonceCount: uses),
                      space: space, isBasic: offer == .basic, credential: credential, source: source)
    }

    /// The credential `ask` or default handling gives for `space`, and where it came from; `nil` when none.
    private mutating func credential(for space: ProtectionSpace, response: LoadResponse, url: URL,
                                     ask: (AuthenticationChallenge) async throws -> ChallengeDisposition) async throws -> (Credential, Source)? {
        let challenge = AuthenticationChallenge(protectionSpace: space, previousFailureCount: failures,
                                                proposedCredential: proposed, failureResponse: response)
        switch try await ask(challenge) {
        case .useCredential(let given):
            return (given, .delegate)
        case .cancelAuthenticationChallenge:
            throw LoadError(.userCancelledAuthentication, url: url, reason: "the delegate cancelled the challenge for \(space.host)")
        case .rejectProtectionSpace, .trustServer:
            return nil
        case .performDefaultHandling:
            if !userInfoTried, let user = url.user(percentEncoded: false) {
                userInfoTried = true
                return (Credential(user: user, password: url.password(percentEncoded: false) ?? ""), .userInfo)
            } else if !storeTried.contains(space.authenticationMethod) {
                // Once, also after the URL's user info was refused: the store may know better. Not the kept `Basic`
                // credential this load sent ahead and the server refused: that would only be refused again.
                storeTried.insert(space.authenticationMethod)
                guard let stored = store?.credential(for: space),
                      stored != refused || space.authenticationMethod != "Basic" else { return nil }
                return (stored, .store)
            } else {
                return nil
            }
        }
    }

    /// A challenge this answers.
    enum Offer: Equatable {
        case basic
        case digest(DigestChallenge)

        /// The `Authorization` value that answers it for `credential` on a request of `method` to `url`; a Digest
        /// answer counts `nonceCount` uses of its nonce.
        func authorization(for credential: Credential, method: String, url: URL, nonceCount: Int = 1) -> String {
            switch self {
            case .basic:
                return credential.basicAuthorization
            case .digest(let digest):
                // The request target as the HTTP handler sends it: the path (or `/`) and the query.
                var target = url.path(percentEncoded: true)
                if target.isEmpty { target = "/" }
                if let query = url.query(percentEncoded: true) { target += "?" + query }
                return digest.authorization(for: credential, method: method, uri: target, cnonce: DigestChallenge.makeClientNonce(),
                                            nonceCount: nonceCount)
            }
        }
    }

    /// Whether `response` is a `401` with a `Basic` or `Digest` challenge this can answer.
    package static func answers(_ response: LoadResponse) -> Bool {
        guard response.status == .unauthorized, let header = response.headerFields[.wwwAuthenticate] else { return false }
        return !offers(in: header, url: response.url).isEmpty
    }

    /// The challenges to answer among those `header` lists, strongest first, each with its protection space: the
    /// first `Digest` one this can answer (a server lists them most preferred first, RFC 7616 §3.7), then a
    /// `Basic` one; empty when there is neither (a server may offer only `Negotiate` or `Bearer`).
    static func offers(in header: String, url: URL) -> [(space: ProtectionSpace, offer: Offer)] {
        let challenges = AuthenticationChallengeList(header)
        var found: [(realm: String?, method: String, offer: Offer)] = []
        if let digest = challenges.challenges.lazy.compactMap(DigestChallenge.init).first {
            found.append((digest.realm, "Digest", .digest(digest)))
        }
        if let basic = challenges.first(scheme: "basic") {
            found.append((basic.parameters["realm"], "Basic", .basic))
        }
        return found.map { realm, method, offer in (ProtectionSpace(url: url, realm: realm, authenticationMethod: method), offer) }
    }
}
