import FoundationEssentials

/// What a TLS server presented, for a server-trust challenge: the hook where an app accepts a
/// certificate the default rules refuse (a development server), or refuses one they accept (pinning).
public struct ServerTrust: Sendable {
    /// The host name the client asked for.
    public var host: String
    /// The port.
    public var port: Int
    /// The certificates as DER bytes, the server's own first. When the default evaluation passed, only
    /// the server's own certificate is given; when it failed, the whole chain the server sent.
    public var certificates: [Data]
    /// Why the default rules (system trust store plus the session's extra roots, validity dates, host
    /// name) refuse the server, or `nil` when they accept it.
    public var defaultEvaluationError: LoadError?

    /// Makes a server-trust description.
    public init(host: String, port: Int, certificates: [Data], defaultEvaluationError: LoadError?) {
        self.host = host
        self.port = port
        self.certificates = certificates
        self.defaultEvaluationError = defaultEvaluationError
    }

    /// The `authenticationMethod` of a server-trust challenge's protection space.
    public static let authenticationMethod = "ServerTrust"
}
