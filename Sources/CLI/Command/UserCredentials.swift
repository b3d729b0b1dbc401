import Loader

/// Answers the HTTP challenges that `--digest` or `--anyauth` let the credentials answer (`-u`'s, else the URL's
/// user info): once per transfer, and only from the origin its URL names (scheme, host and port, as curl keeps
/// them from a host a redirect leads to). A challenge of another method is refused, so that `--digest` never
/// sends the password in the clear.
final class UserCredentials: LoaderSessionDelegate {
    private let credential: Credential?
    private let methods: Set<String>

    /// - Parameter credential: `-u`'s, or `nil` to take each transfer's URL's user info.
    init(_ credential: Credential?, methods: Set<String>) {
        self.credential = credential
        self.methods = methods
    }

    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        // Server trust (TLS) stays with -k and --cacert.
        guard challenge.serverTrust == nil else { return .performDefaultHandling }
        let space = challenge.protectionSpace
        let url = task.originalRequest.url
        guard methods.contains(space.authenticationMethod), challenge.previousFailureCount == 0, space.isServer(of: url),
              let credential = credential ?? url.user(percentEncoded: false).map({
                  Credential(user: $0, password: url.password(percentEncoded: false) ?? "")
              })
        else { return .rejectProtectionSpace }
        return .useCredential(credential)
    }
}
