/// An HTTP proxy's answer other than 2xx to the `CONNECT` that asked it for a tunnel: the underlying error of the
/// ``Loader/LoadError`` a load through it fails with (``Loader/LoadError/Code/cannotConnectToHost``, or
/// ``Loader/LoadError/Code/userAuthenticationRequired`` for a `407` nobody answered). curl's exit status for it is 56.
public struct ProxyTunnelRefused: Error, Sendable, CustomStringConvertible {
    /// The proxy's status code.
    public let status: Int
    /// The `Basic` challenge of a `407`, for the handler to ask the delegates about.
    let challenge: ProxyChallenge?

    init(status: Int, challenge: ProxyChallenge? = nil) {
        self.status = status
        self.challenge = challenge
    }

    public var description: String { "the proxy refused the tunnel (\(status))" }
}
