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
    @HandlerSetting public var maximumConnectionsPerHost = 8
    /// Seconds an unused keep-alive connection stays open.
    @HandlerSetting public var idleConnectionTimeout: TimeInterval = 60
    /// Seconds a TCP connect and its TLS handshake may take together.
    @HandlerSetting public var connectTimeout: TimeInterval = 30
    /// Name-resolution overrides, curl's `--resolve`: `"host:port"` → an address to connect to instead.
    /// The request keeps its host name for `Host`, SNI and certificate checks. A request's entries are
    /// added to its session's, replacing those for the same `"host:port"` (a request cannot remove one).
    @HandlerSetting public var resolve: [String: String] = [:]
    /// Connection redirects, curl's `--connect-to`: `"host:port"` → `"otherhost:otherport"`, where the connection goes
    /// instead (a cluster's one node, a server not yet in DNS). Either side's host or port may be empty: on the left
    /// any host or port, on the right the request's own. The first of `"host:port"`, `"host:"`, `":port"` and `":"`
    /// that is set applies, the most specific (curl takes the first its command line matches). The request keeps its
    /// URL for `Host`, SNI and certificate checks; `resolve` then applies to the new host and port. Not through a proxy,
    /// which is asked for the request's own host (curl asks it for the new one). Merged as `resolve` is.
    @HandlerSetting public var connectTo: [String: String] = [:]
    /// Which IP version connections use, curl's `-4` and `-6`: a host name is looked up for that version's addresses
    /// alone (a proxy's too), and one without any fails with `cannotFindHost`. `.any` (the default) tries both.
    @HandlerSetting public var addressFamily: AddressFamily = .any
    /// A Unix domain socket to connect to instead of the network, curl's `--unix-socket`: every connection goes to
    /// this path, whatever the URL's host and port. The request keeps its URL for the `Host` field, and an `https`
    /// one for its TLS name and certificate checks. No proxy is used while it is set, as curl does not mix the two.
    /// Connections to different sockets are never shared.
    @HandlerSetting public var unixSocketPath: String? = nil
    /// The proxy (HTTP, HTTPS, SOCKS5 or SOCKS4) that `http` requests and `ws` handshakes go through (curl's `-x`, or
    /// `http_proxy`); `nil` (the default) connects to servers directly. A request may set `nil` to go directly
    /// whatever its session sets. See ``Proxy``.
    @HandlerSetting public var httpProxy: Proxy? = nil
    /// The proxy (HTTP, HTTPS, SOCKS5 or SOCKS4) that `https` requests and `wss` handshakes go through, always in a tunnel
    /// (curl's `-x`, or `https_proxy`); `nil` (the default) connects directly. Set both to send everything
    /// through one proxy.
    @HandlerSetting public var httpsProxy: Proxy? = nil

    /// The proxy a request of `scheme` goes through: ``httpsProxy`` for `https`, ``httpProxy`` otherwise.
    func proxy(for scheme: String) -> Proxy? {
        scheme == "https" ? httpsProxy : httpProxy
    }
    /// Whether `http` requests too go through an HTTP proxy in a `CONNECT` tunnel (as `https` ones always do), rather
    /// than forwarded by it with their whole URL: curl's `-p`/`--proxytunnel`. The server then sees the request as if
    /// there were no proxy, and the proxy's credentials go only with the `CONNECT`. `false` unless set.
    @HandlerSetting public var tunnelsThroughProxy = false
    /// Hosts reached directly even when a proxy is set, curl's `--noproxy`: each names itself and the hosts
    /// beneath it (`example.com` covers `www.example.com`); `*` names every host.
    @HandlerSetting public var noProxy: [String] = []
    /// Whether an `https` connection offers HTTP/2 besides HTTP/1.1 in its TLS handshake (ALPN), as URLSession
    /// and curl do; the server chooses. Over HTTP/2 one connection carries many requests at once. `false` is
    /// curl's `--http1.1`. Plain `http` uses HTTP/1.1 unless ``http2PriorKnowledge`` says otherwise; WebSocket
    /// handshakes always do.
    @HandlerSetting public var allowsHTTP2 = true
    /// Whether an `http` connection speaks HTTP/2 from its first byte, with no upgrade (cleartext HTTP/2 "with prior
    /// knowledge", RFC 9113 §3.3), as curl's `--http2-prior-knowledge`: for a server known to speak it. One connection
    /// then carries many requests at once, as over TLS. A server that answers in HTTP/1.1 fails the load with
    /// `badServerResponse`. Not through an HTTP proxy that forwards `http` requests (HTTP/1.1 there), nor when
    /// ``allowsHTTP2`` is `false`; WebSocket handshakes stay HTTP/1.1.
    @HandlerSetting public var http2PriorKnowledge = false
    /// The `User-Agent` sent with a request that has none of its own (and with a WebSocket handshake):
    /// `swift-url-loader/0.1` unless set; `nil` sends none, as curl's `-A ''` does. Bytes a field's value cannot hold
    /// (a line break) are sent as spaces. Requests with different agents share connections.
    @HandlerSetting public var userAgent: String? = HTTPRequestPlan.userAgent
    /// TLS settings for `https:`.
    public var tls = TLSOptions()

    /// Makes the default settings.
    public init() {}

    /// Where a connection to `host` and `port` goes, after ``connectTo``: the first entry that matches, its empty host
    /// or port keeping the request's.
    func connectionTarget(host: String, port: Int) -> (host: String, port: Int) {
        guard !connectTo.isEmpty else { return (host, port) }
        for key in ["\(host):\(port)", "\(host):", ":\(port)", ":"] {
            guard let target = connectTo[key], let colon = target.lastIndex(of: ":") else { continue }
            let newHost = String(target[..<colon]).trimming(while: { $0 == "[" || $0 == "]" })
            let newPort = Int(target[target.index(after: colon)...])
            return (newHost.isEmpty ? host : String(newHost), newPort ?? port)
        }
        return (host, port)
    }

    /// The session's settings with those the request set in their place.
    public static func merged(_ requestValue: HTTPClientOptions, over sessionValue: HTTPClientOptions) -> HTTPClientOptions {
        var merged = requestValue
        merged.$maximumConnectionsPerHost = requestValue.$maximumConnectionsPerHost.over(sessionValue.$maximumConnectionsPerHost)
        merged.$idleConnectionTimeout = requestValue.$idleConnectionTimeout.over(sessionValue.$idleConnectionTimeout)
        merged.$connectTimeout = requestValue.$connectTimeout.over(sessionValue.$connectTimeout)
        merged.$unixSocketPath = requestValue.$unixSocketPath.over(sessionValue.$unixSocketPath)
        merged.$addressFamily = requestValue.$addressFamily.over(sessionValue.$addressFamily)
        merged.$resolve = sessionValue.$resolve
        if requestValue.$resolve.isSet { merged.resolve.merge(requestValue.resolve) { _, requested in requested } }
        merged.$connectTo = sessionValue.$connectTo
        if requestValue.$connectTo.isSet { merged.connectTo.merge(requestValue.connectTo) { _, requested in requested } }
        merged.$httpProxy = requestValue.$httpProxy.over(sessionValue.$httpProxy)
        merged.$httpsProxy = requestValue.$httpsProxy.over(sessionValue.$httpsProxy)
        merged.$noProxy = requestValue.$noProxy.over(sessionValue.$noProxy)
        merged.$tunnelsThroughProxy = requestValue.$tunnelsThroughProxy.over(sessionValue.$tunnelsThroughProxy)
        merged.$allowsHTTP2 = requestValue.$allowsHTTP2.over(sessionValue.$allowsHTTP2)
        merged.$http2PriorKnowledge = requestValue.$http2PriorKnowledge.over(sessionValue.$http2PriorKnowledge)
        merged.$userAgent = requestValue.$userAgent.over(sessionValue.$userAgent)
        merged.tls = TLSOptions.merged(requestValue.tls, over: sessionValue.tls)
        return merged
    }

    /// TLS settings.
    public struct TLSOptions: Sendable, Hashable {
        /// The lowest TLS version accepted: curl's `--tlsv1.2` and `--tlsv1.3`, URLSession's
        /// `tlsMinimumSupportedProtocolVersion`.
        @HandlerSetting public var minimumVersion: Version = .tls12
        /// The highest TLS version offered: curl's `--tls-max`, URLSession's `tlsMaximumSupportedProtocolVersion`. Below
        /// ``minimumVersion``, no connection can open: loads fail with ``LoadError/Code/secureConnectionFailed``.
        @HandlerSetting public var maximumVersion: Version = .tls13
        /// A PEM file of extra trusted root certificates, added to the system's.
        @HandlerSetting public var additionalTrustRootsPEMFile: String? = nil
        /// Whether to verify the server's certificate and host name. Turning it off is curl's `-k`.
        @HandlerSetting public var verifiesCertificates = true
        /// A PEM file holding the certificate to show a server that asks for one (mutual TLS), followed by any
        /// intermediate certificates: curl's `--cert`. Its private key is read from ``clientPrivateKeyPEMFile``, or
        /// from this file when that is not set (a certificate and key in one file).
        @HandlerSetting public var clientCertificatePEMFile: String? = nil
        /// A PEM file holding the private key of ``clientCertificatePEMFile``: curl's `--key`. A request that sets its
        /// own certificate takes its own key and passphrase too (none if it sets none), not its session's.
        @HandlerSetting public var clientPrivateKeyPEMFile: String? = nil
        /// The passphrase of an encrypted private key: curl's `--pass`.
        @HandlerSetting public var clientPrivateKeyPassphrase: String? = nil
        /// The public keys the server's certificate may have, each `sha256//` and the base64 of the SHA-256 of its
        /// SubjectPublicKeyInfo (DER): curl's `--pinnedpubkey`, OkHttp's `CertificatePinner`. Empty (the default): any
        /// key the trust checks accept. Checked on each new connection after those checks (with
        /// ``verifiesCertificates`` off too); another key fails the load with
        /// ``LoadError/Code/serverCertificateUntrusted``, its `underlying` a ``Loader/PublicKeyPinMismatch``. For the
        /// origin server alone: an HTTPS proxy's certificate is not checked against them (curl pins a proxy with a
        /// `--proxy-pinnedpubkey` of its own, which this has no counterpart of).
        @HandlerSetting public var pinnedPublicKeys: Set<String> = []

        /// Makes the default TLS settings: TLS 1.2 or 1.3, the system's trust store, full verification, no
        /// client certificate.
        public init() {}

        /// The session's TLS settings with those the request set in their place.
        static func merged(_ request: TLSOptions, over session: TLSOptions) -> TLSOptions {
            var merged = request
            merged.$minimumVersion = request.$minimumVersion.over(session.$minimumVersion)
            merged.$maximumVersion = request.$maximumVersion.over(session.$maximumVersion)
            merged.$additionalTrustRootsPEMFile = request.$additionalTrustRootsPEMFile.over(session.$additionalTrustRootsPEMFile)
            merged.$verifiesCertificates = request.$verifiesCertificates.over(session.$verifiesCertificates)
            merged.$pinnedPublicKeys = request.$pinnedPublicKeys.over(session.$pinnedPublicKeys)
            // A request's own certificate comes with its own key and passphrase (or none): the session's key
            // would not be this certificate's.
            if !request.$clientCertificatePEMFile.isSet {
                merged.$clientCertificatePEMFile = session.$clientCertificatePEMFile
                merged.$clientPrivateKeyPEMFile = request.$clientPrivateKeyPEMFile.over(session.$clientPrivateKeyPEMFile)
                merged.$clientPrivateKeyPassphrase = request.$clientPrivateKeyPassphrase.over(session.$clientPrivateKeyPassphrase)
            }
            return merged
        }

        /// A TLS protocol version (the loader's, which metrics name too).
        public typealias Version = TLSProtocolVersion
    }
}
