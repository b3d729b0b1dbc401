/// Why a load failed at its proxy rather than at the server: the proxy's name could not be resolved, or a SOCKS proxy
/// refused the tunnel or broke its handshake. A ``LoadError``'s `underlying`; the error's code stays the nearest one
/// (``LoadError/Code/cannotFindHost``, ``LoadError/Code/cannotConnectToHost``,
/// ``LoadError/Code/userAuthenticationRequired``, …), and this says which step failed, for a tool that tells them apart
/// as curl's exit statuses do (`loadurl` exits 5 and 97, as curl). An HTTP proxy's refusal of its tunnel is
/// `HTTPScheme.ProxyTunnelRefused`.
public struct ProxyFailure: Error, Sendable, CustomStringConvertible {
    /// The step of going through the proxy that failed.
    public enum Step: Sendable, Hashable {
        /// The proxy's own name could not be resolved (curl's 5).
        case nameLookup
        /// A SOCKS proxy refused the request or the login, answered other than SOCKS, or closed the connection before
        /// opening the tunnel; or it could not be asked for the server (a name to resolve here that is not found, an
        /// address, a name or a login too long for the protocol). curl's 97.
        case socksHandshake
    }

    /// The step that failed.
    public let step: Step
    /// The proxy as `host:port`, when the handler knows it.
    public let proxy: String?
    /// What the step failed with, when there is more to say (the resolver's error, the SOCKS library's).
    public let cause: (any Error)?

    /// A failure of `step` at `proxy`, from `cause`.
    public init(_ step: Step, proxy: String?, cause: (any Error)? = nil) {
        self.step = step
        self.proxy = proxy
        self.cause = cause
    }

    /// The step and the proxy, then the cause.
    public var description: String {
        let which = proxy.map { " \($0)" } ?? ""
        let what = switch step {
        case .nameLookup: "the name of the proxy\(which) could not be resolved"
        case .socksHandshake: "the SOCKS proxy\(which) did not open the tunnel"
        }
        return what + (cause.map { ": \($0)" } ?? "")
    }
}
