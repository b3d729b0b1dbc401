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

    /// Credentials tried per load unless set otherwise (by the session's own middleware, and a WebSocket handshake's).
    public static let defaultMaximumAttempts = 3

    /// Makes the middleware.
    /// - Parameters:
    ///   - store: Where default handling looks for credentials, or `nil` for none.
    ///   - maximumAttempts: Credentials tried per load.
    public init(store: CredentialStore?, maximumAttempts: Int = defaultMaximumAttempts) {
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
        var answering = ChallengeAnswering(store: store, maximumAttempts: maximumAttempts, refused: refused)
        while true {
            let answer: ChallengeAnswering.Answer?
            do {
                answer = try await answering.answer(to: result.response, method: current.method.rawValue, url: current.url) {
                    try await context.task.didReceive($0)
                }
            } catch {
                result.body.discard()
                throw error
            }
            guard let answer else { return result }
            result.body.discard()
            if let body = current.body, !body.canBeSentAgain {
                throw body.notSentAgain(to: current.url, for: "answering the 401 challenge for \(answer.space.host)")
            }
            current.headerFields[.authorization] = answer.authorization
            result = try await next(current)
            if answer.isBasic, answer.source != .userInfo, let status = result.response.status, status.code < 400 {
                // Accepted: a 403 or a 5xx says nothing good of the credential.
                accepted.remember(answer.authorization, space: answer.space, url: current.url,
                                  storeHeld: answer.source == .store ? answer.credential : nil)
            }
        }
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
