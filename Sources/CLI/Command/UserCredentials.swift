import Loader

/// Answers the HTTP challenges that `--digest` or `--anyauth` let `-u`'s credentials answer: once per transfer,
/// and only from the host its URL names (curl does not send them to a host a redirect leads to either).
/// A challenge of another method is refused, so that `--digest` never sends the password in the clear.
final class UserCredentials: LoaderSessionDelegate {
    private let credential: Credential
    private let methods: Set<String>

    init(_ credential: Credential, methods: Set<String>) {
        self.credential = credential
        self.methods = methods
    }

    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        // Server trust (TLS) stays with -k and --cacert.
        guard challenge.serverTrust == nil else { return .performDefaultHandling }
        let space = challenge.protectionSpace
        guard methods.contains(space.authenticationMethod), challenge.previousFailureCount == 0,
              space.host == task.originalRequest.url.host(percentEncoded: false)?.lowercased() else {
            return .rejectProtectionSpace
        }
        return .useCredential(credential)
    }
}
