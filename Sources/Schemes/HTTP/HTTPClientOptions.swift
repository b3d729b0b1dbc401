import FoundationEssentials
import Loader

/// Settings of the HTTP handler, set per session (`configuration.handlerOptions[HTTPClientOptions.self]`)
/// or per request (`request.options[HTTPClientOptions.self]`).
public struct HTTPClientOptions: Sendable, Hashable, HandlerOptionKey {
    /// The settings when none were set.
    public static var defaultValue: HTTPClientOptions { HTTPClientOptions() }

    /// Connections kept open to one origin (scheme, host, port) at most; further requests wait.
    public var maximumConnectionsPerHost = 8
    /// Seconds an unused keep-alive connection stays open.
    public var idleConnectionTimeout: TimeInterval = 60
    /// Seconds a TCP connect (and TLS handshake) may take.
    public var connectTimeout: TimeInterval = 30
    /// Name-resolution overrides, curl's `--resolve`: `"host:port"` → an address to connect to instead.
    /// The request keeps its host name for `Host`, SNI and certificate checks.
    public var resolve: [String: String] = [:]
    /// TLS settings for `https:`.
    public var tls = TLSOptions()

    /// Makes the default settings.
    public init() {}

    /// TLS settings.
    public struct TLSOptions: Sendable, Hashable {
        /// The lowest TLS version accepted.
        public var minimumVersion: Version = .tls12
        /// A PEM file of extra trusted root certificates, added to the system's.
        public var additionalTrustRootsPEMFile: String?
        /// Whether to verify the server's certificate and host name. Turning it off is curl's `-k`.
        public var verifiesCertificates = true

        /// Makes the default TLS settings: TLS 1.2 or later, the system's trust store, full verification.
        public init() {}

        /// A TLS protocol version.
        public enum Version: Sendable, Hashable {
            /// TLS 1.2.
            case tls12
            /// TLS 1.3.
            case tls13
        }
    }
}
