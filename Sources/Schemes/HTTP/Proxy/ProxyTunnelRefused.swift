/// An HTTP proxy's answer other than 2xx to the `CONNECT` that asked it for a tunnel: the underlying error of the
/// ``Loader/LoadError`` a load through it fails with (``Loader/LoadError/Code/cannotConnectToHost``, or
/// ``Loader/LoadError/Code/userAuthenticationRequired`` for a `407`, or a `401` as tinyproxy sends, nobody answered). curl's exit status for it is 56.
public struct ProxyTunnelRefused: Error, Sendable, CustomStringConvertible {
    /// The proxy's status code.
    public let status: Int
    /// The `CONNECT` request and the proxy's answer, a line each, marked as `-v` prints them (`> ` sent, `< `
    /// received); a `Proxy-Authorization` sent is among them, as in a successful tunnel's transaction metrics.
    public let dialogue: [String]
    /// The `Basic` challenge of a `407`, for the handler to ask the delegates about.
    let challenge: ProxyChallenge?

    init(status: Int, dialogue: [String], challenge: ProxyChallenge? = nil) {
        self.status = status
        self.dialogue = dialogue
        self.challenge = challenge
    }

    public var description: String { "the proxy refused the tunnel (\(status))" }
}
