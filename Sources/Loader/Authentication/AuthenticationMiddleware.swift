import FoundationEssentials
import HTTPTypes

/// Answers HTTP `Digest` (RFC 7616) and `Basic` challenges (401 with `WWW-Authenticate`): asks the task's
/// delegate, then the session's, and by default uses the URL's user info, then the session's credential
/// store. When nobody has a credential, or the server refused ``maximumAttempts`` of them, the 401 response
/// goes to the caller: a challenge never makes a load hang.
///
/// A server that offers both is asked about `Digest` first, which keeps the password off the wire (as URLSession
/// and curl's `--anyauth` choose), then, if nobody has a credential for it (or the delegate refuses that
/// protection space), about `Basic`; the protection space's ``ProtectionSpace/authenticationMethod`` says which,
/// `"Digest"` or `"Basic"`. A `Digest` answer the server calls stale (its nonce expired) goes again with the
/// new nonce and the same credential, without asking anyone. User names and passwords are hashed as UTF-8.
///
/// A `Basic` credential the server accepted (a status below 400) is kept by the middleware and sent at once with
/// later requests to the same server (scheme, host and port) whose path lies at or below the accepted
/// request's directory (its path up to the last `/`), as URLSession and curl's `-u` do, so that they take one
/// round trip rather than two; nobody is asked about those. The session's own middleware keeps them for that
/// session; one an app adds to ``LoaderSession/Configuration/middleware`` keeps them for every session made with
/// it. A credential from a URL's user info is not kept (it is that URL's), and a request that sets
/// `Authorization` itself, or whose URL carries user info, is left as it is. When the server refuses a credential
/// sent that way (a 401), it is forgotten, and the challenge is answered as one that followed a refused answer, as
/// URLSession's does: its ``AuthenticationChallenge/previousFailureCount`` is 1, it proposes the refused credential,
/// and default handling does not send that credential again. One that came from the
/// credential store goes unasked only while the store still holds it for that protection space: removed or
/// replaced there, it is no longer sent, as URLSession stops sending one removed from its credential storage.
public struct AuthenticationMiddleware: LoadMiddleware {
    /// Credentials tried per load before the 401 is handed to the caller; a kept credential sent ahead and refused
    /// is one of them.
    public var maximumAttempts: Int
    let store: CredentialStore?
    let accepted = AuthenticationCache()

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
    /// `refused` is a kept credential this layer sent with `request` unasked, which `first` refuses: it counts as the
    /// load's first failure.
    @inline(never)
    fileprivate func answerChallenges(_ first: LoadResult, to request: LoadRequest, refused: Credential?, context: LoadContext,
                                      next: LoadNext) async throws -> LoadResult {
        var current = request
        var result = first
        var failures = refused == nil ? 0 : 1
        var proposed = refused
        // Whether the last answer was a Digest one: only that can have gone with a nonce the server now calls stale.
        var answeredDigest = false
        var userInfoTried = false
        // Per method: a store without a Digest credential may have a Basic one for the same server.
        var storeTried: Set<String> = []
        var staleAnswers = 0
        // How often each nonce has been answered: a server may send a nonce again, and checks that the count grows.
        var nonceUses: [String: Int] = [:]
        // Where the credential being answered with came from: the URL's user info is the URL's alone.
        var source = Source.delegate
        while true {
            guard result.response.status == .unauthorized,
                  let header = result.response.headerFields[.wwwAuthenticate],
                  case let offers = Self.offers(in: header, url: current.url), let first = offers.first
            else { return result }
            var chosen: (space: ProtectionSpace, offer: Offer, credential: Credential)?
            if case .digest(let digest) = first.offer, digest.stale, answeredDigest, let proposed, staleAnswers < Self.maximumStaleAnswers {
                // The credential was right and the nonce old: again with the new one (a few times at most, so that
                // a server that calls every nonce stale cannot keep the load going).
                staleAnswers += 1
                chosen = (first.space, first.offer, proposed)
            } else {
                guard failures < maximumAttempts else { return result }
                // The strongest first; one nobody has a credential for (or that the delegate refuses) gives way
                // to the next, as URLSession goes on after `rejectProtectionSpace`.
                for (space, offer) in offers {
                    if let (credential, from) = try await ask(about: space, failures: failures, proposed: proposed, refused: refused, result: result,
                                                              request: current, context: context, userInfoTried: &userInfoTried,
                                                              storeTried: &storeTried) {
                        chosen = (space, offer, credential)
                        source = from
                        break
                    }
                }
                failures += 1
            }
            guard let (space, offer, credential) = chosen else { return result }
            result.body.discard()
            if let body = current.body, !body.canBeSentAgain {
                throw body.notSentAgain(to: current.url, for: "answering the 401 challenge for \(space.host)")
            }
            proposed = credential
            var uses = 1
            answeredDigest = false
            if case .digest(let digest) = offer {
                uses = nonceUses[digest.nonce, default: 0] + 1
                nonceUses[digest.nonce] = uses
                answeredDigest = true
            }
            let authorization = offer.authorization(for: credential, method: current.method.rawValue, url: current.url, nonceCount: uses)
            current.headerFields[.authorization] = authorization
            result = try await next(current)
            if offer == .basic, source != .userInfo, let status = result.response.status, status.code < 400 {
                // Accepted: a 403 or a 5xx says nothing good of the credential.
                accepted.remember(authorization, space: space, url: current.url, storeHeld: source == .store ? credential : nil)
            }
        }
    }

    /// How many times a load answers a `Digest` challenge marked stale with the credential it has.
    static let maximumStaleAnswers = 2

    /// Where a credential came from.
    private enum Source {
        case delegate, userInfo, store
    }

    /// The credential the delegates or default handling give for `space`, and where it came from; `nil` when none.
    /// Throws when the delegate cancels.
    private func ask(about space: ProtectionSpace, failures: Int, proposed: Credential?, refused: Credential?, result: LoadResult, request current: LoadRequest,
                     context: LoadContext, userInfoTried: inout Bool, storeTried: inout Set<String>) async throws -> (Credential, Source)? {
        let challenge = AuthenticationChallenge(protectionSpace: space, previousFailureCount: failures,
                                                proposedCredential: proposed, failureResponse: result.response)
        let disposition: ChallengeDisposition
        do {
            disposition = try await context.task.didReceive(challenge)
        } catch {
            result.body.discard()
            throw error
        }
        switch disposition {
        case .useCredential(let given):
            return (given, .delegate)
        case .cancelAuthenticationChallenge:
            result.body.discard()
            throw LoadError(.userCancelledAuthentication, url: current.url, reason: "the delegate cancelled the challenge for \(space.host)")
        case .rejectProtectionSpace, .trustServer:
            return nil
        case .performDefaultHandling:
            if !userInfoTried, let user = current.url.user(percentEncoded: false) {
                userInfoTried = true
                return (Credential(user: user, password: current.url.password(percentEncoded: false) ?? ""), .userInfo)
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

    /// A challenge this middleware answers.
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

// Most responses are no challenge. Answering is the further work, so that its larger async frame (the
// challenge, the credential) is allocated only for a 401.
extension AuthenticationMiddleware: BuiltInLayer {
    /// `request` with the `Basic` credential its server accepted for the request's directory, if one is kept (and,
    /// for one from the store, the store still holds it); then the result is looked at (``transformed(_:sent:)``),
    /// to forget the credential if the server refuses it.
    func passingDown(_ request: LoadRequest) -> (request: LoadRequest, transforms: Bool) {
        guard let entry = accepted.entry(for: request.url), request.headerFields[.authorization] == nil else { return (request, false) }
        if let held = entry.storeHeld, store?.credential(for: entry.space) != held {
            accepted.forget(for: request.url, authorization: entry.authorization)
            return (request, false)
        }
        var request = request
        request.headerFields[.authorization] = entry.authorization
        return (request, true)
    }

    /// The result of a request sent with a kept credential: a 401 means the server no longer takes it, so it is no
    /// longer sent unasked; only the entry that still carries what was sent goes (another load may have replaced
    /// it with one the server takes). Without `sent`, the entry for the URL goes.
    func transformed(_ result: LoadResult, sent: LoadRequest?) -> LoadResult {
        guard result.response.status == .unauthorized else { return result }
        accepted.forget(for: result.response.url, authorization: sent?.headerFields[.authorization])
        return result
    }

    func needsMore(_ result: LoadResult) -> Bool {
        result.response.status == .unauthorized
    }

    func more(_ result: LoadResult, for request: LoadRequest, sent: LoadRequest?, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await answerChallenges(result, to: request, refused: Self.sentAhead(received: request, sent: sent), context: context, next: next)
    }

    /// The kept credential this layer added to `received` (``passingDown(_:)``): what `sent` carries that `received`
    /// did not. Read from the request the 401 answers, not from the kept credentials, which may have changed since
    /// it went (an entry dropped, or replaced by another load). `nil` when `received` carried its own field, went
    /// without one, or the request the result answers is not known.
    private static func sentAhead(received: LoadRequest, sent: LoadRequest?) -> Credential? {
        guard received.headerFields[.authorization] == nil, let value = sent?.headerFields[.authorization] else { return nil }
        return Credential(basicAuthorization: value)
    }
}
