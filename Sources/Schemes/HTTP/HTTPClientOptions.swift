import FoundationEssentials
import Loader

/// Settings of the HTTP handler, set per session (`configuration.handlerOptions[HTTPClientOptions.self]`)
/// or per request (`request.options[HTTPClientOptions.self]`).
///
/// A request's settings change only what the request sets: one that sets a `connectTimeout` keeps its
/// session's TLS settings, host overrides and the rest. To undo a session's setting, a request sets it
/// (to the default, if that is what it wants): a setting set counts even when it equals the default. Two
/// values are equal when every setting reads the same, set or not, so equal values may still merge
/// differently over a session.
public struct HTTPClientOptions: Sendable, Hashable, HandlerOptionKey {
    /// The settings when none were set.
    public static var defaultValue: HTTPClientOptions { HTTPClientOptions() }

    /// Connections kept open to one origin (scheme, host, port) at most; further requests wait.
    public var maximumConnectionsPerHost: Int {
        get { chosen.maximumConnectionsPerHost ?? 8 }
        set { chosen.maximumConnectionsPerHost = newValue }
    }
    /// Seconds an unused keep-alive connection stays open.
    public var idleConnectionTimeout: TimeInterval {
        get { chosen.idleConnectionTimeout ?? 60 }
        set { chosen.idleConnectionTimeout = newValue }
    }
    /// Seconds a TCP connect and its TLS handshake may take together.
    public var connectTimeout: TimeInterval {
        get { chosen.connectTimeout ?? 30 }
        set { chosen.connectTimeout = newValue }
    }
    /// Name-resolution overrides, curl's `--resolve`: `"host:port"` → an address to connect to instead.
    /// The request keeps its host name for `Host`, SNI and certificate checks. A request's entries are
    /// added to its session's, replacing those for the same `"host:port"` (a request cannot remove one).
    public var resolve: [String: String] {
        get { chosen.resolve ?? [:] }
        set { chosen.resolve = newValue }
    }
    /// TLS settings for `https:`.
    public var tls = TLSOptions()

    /// The settings set so far, `nil` where left at the default: what a request's value overrides.
    private var chosen = Chosen()

    private struct Chosen: Sendable {
        var maximumConnectionsPerHost: Int?
        var idleConnectionTimeout: TimeInterval?
        var connectTimeout: TimeInterval?
        var resolve: [String: String]?
    }

    /// Makes the default settings.
    public init() {}

    /// The session's settings with those the request set in their place.
    public static func merged(_ requestValue: HTTPClientOptions, over sessionValue: HTTPClientOptions) -> HTTPClientOptions {
        var merged = sessionValue
        let request = requestValue.chosen
        if let value = request.maximumConnectionsPerHost { merged.maximumConnectionsPerHost = value }
        if let value = request.idleConnectionTimeout { merged.idleConnectionTimeout = value }
        if let value = request.connectTimeout { merged.connectTimeout = value }
        if let value = request.resolve { merged.resolve.merge(value) { _, requested in requested } }
        merged.tls = TLSOptions.merged(requestValue.tls, over: sessionValue.tls)
        return merged
    }

    /// Whether every setting reads the same.
    public static func == (lhs: HTTPClientOptions, rhs: HTTPClientOptions) -> Bool {
        lhs.maximumConnectionsPerHost == rhs.maximumConnectionsPerHost
            && lhs.idleConnectionTimeout == rhs.idleConnectionTimeout
            && lhs.connectTimeout == rhs.connectTimeout
            && lhs.resolve == rhs.resolve
            && lhs.tls == rhs.tls
    }

    /// Hashes every setting as it reads.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(maximumConnectionsPerHost)
        hasher.combine(idleConnectionTimeout)
        hasher.combine(connectTimeout)
        hasher.combine(resolve)
        hasher.combine(tls)
    }

    /// TLS settings.
    public struct TLSOptions: Sendable, Hashable {
        /// The lowest TLS version accepted.
        public var minimumVersion: Version {
            get { chosen.minimumVersion ?? .tls12 }
            set { chosen.minimumVersion = newValue }
        }
        /// A PEM file of extra trusted root certificates, added to the system's.
        public var additionalTrustRootsPEMFile: String? {
            get { chosen.additionalTrustRootsPEMFile ?? nil }
            set { chosen.additionalTrustRootsPEMFile = .some(newValue) }
        }
        /// Whether to verify the server's certificate and host name. Turning it off is curl's `-k`.
        public var verifiesCertificates: Bool {
            get { chosen.verifiesCertificates ?? true }
            set { chosen.verifiesCertificates = newValue }
        }

        /// The settings set so far, `nil` where left at the default.
        private var chosen = Chosen()

        private struct Chosen: Sendable {
            var minimumVersion: Version?
            // Set to `.some(nil)` when a request asks for no extra roots over a session that has some.
            var additionalTrustRootsPEMFile: String??
            var verifiesCertificates: Bool?
        }

        /// Makes the default TLS settings: TLS 1.2 or later, the system's trust store, full verification.
        public init() {}

        /// The session's TLS settings with those the request set in their place.
        static func merged(_ request: TLSOptions, over session: TLSOptions) -> TLSOptions {
            var merged = session
            if let value = request.chosen.minimumVersion { merged.minimumVersion = value }
            if let value = request.chosen.additionalTrustRootsPEMFile { merged.additionalTrustRootsPEMFile = value }
            if let value = request.chosen.verifiesCertificates { merged.verifiesCertificates = value }
            return merged
        }

        /// Whether every setting reads the same.
        public static func == (lhs: TLSOptions, rhs: TLSOptions) -> Bool {
            lhs.minimumVersion == rhs.minimumVersion
                && lhs.additionalTrustRootsPEMFile == rhs.additionalTrustRootsPEMFile
                && lhs.verifiesCertificates == rhs.verifiesCertificates
        }

        /// Hashes every setting as it reads.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(minimumVersion)
            hasher.combine(additionalTrustRootsPEMFile)
            hasher.combine(verifiesCertificates)
        }

        /// A TLS protocol version.
        public enum Version: Sendable, Hashable {
            /// TLS 1.2.
            case tls12
            /// TLS 1.3.
            case tls13
        }
    }
}
