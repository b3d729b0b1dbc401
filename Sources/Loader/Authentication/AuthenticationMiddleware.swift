import FoundationEssentials
import HTTPTypes

/// Answers HTTP `Basic` challenges (401 with `WWW-Authenticate`): asks the task's delegate, then the
/// session's, and by default uses the URL's user info, then the session's credential store. When nobody
/// has a credential, or the server refused ``maximumAttempts`` of them, the 401 response goes to the
/// caller: a challenge never makes a load hang.
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
        while true {
            guard result.response.status == .unauthorized,
                  let header = result.response.headerFields[.wwwAuthenticate],
                  let space = Self.basicSpace(header, url: current.url),
                  failures < maximumAttempts
            else { return result }
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
            guard let credential else { return result }
            result.body.discard()
            if let body = current.body, !body.canBeSentAgain {
                throw body.notSentAgain(to: current.url, for: "answering the 401 challenge for \(space.host)")
            }
            failures += 1
            proposed = credential
            current.headerFields[.authorization] = "Basic " + Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
            result = try await next(current)
        }
    }

    /// The protection space of the `Basic` challenge among those `header` lists, or `nil` if none is `Basic`
    /// (a server may offer `Negotiate` or `Bearer` first, in the same field or in another).
    static func basicSpace(_ header: String, url: URL) -> ProtectionSpace? {
        guard let basic = AuthenticationChallengeList(header).first(scheme: "basic") else { return nil }
        let realm = basic.parameters["realm"]
        let scheme = url.scheme?.lowercased() ?? "http"
        return ProtectionSpace(host: url.host(percentEncoded: false) ?? "", port: url.port ?? (scheme == "https" ? 443 : 80),
                               scheme: scheme, realm: realm, authenticationMethod: "Basic")
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
