import HTTPTypes
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader

extension HTTPClientOptions {
    /// A proxy that requests go through (``HTTPClientOptions/httpProxy``, ``HTTPClientOptions/httpsProxy``), as
    /// curl's `-x http://host:port`, `-x https://host:port` or `-x socks5h://host:port`.
    ///
    /// Through an HTTP proxy, an `http` request goes to the proxy with the whole URL as its target; an `https`
    /// one asks the proxy for a tunnel (`CONNECT host:port`) and speaks TLS with the server inside it, so the
    /// proxy sees only the host and port. Credentials go in a `Proxy-Authorization` field, Basic, to the proxy
    /// alone; without them, the proxy's challenge (407) is asked about through the delegates (see
    /// ``HTTPSchemeHandler/load()``). Through a SOCKS5 proxy both open a tunnel (RFC 1928), and the proxy resolves
    /// the server's name; with a ``user``, the client logs in with user name and password (RFC 1929). A SOCKS4 proxy
    /// opens a tunnel too, to an IPv4 address this end looks up (`socks4://`), or to a name the proxy resolves
    /// (`socks4a://`); a ``user`` is sent as SOCKS4's user ID, with no password.
    public struct Proxy: Sendable, Hashable {
        /// The protocol spoken with the proxy.
        public enum Kind: Sendable, Hashable {
            /// An HTTP proxy: absolute-form requests for `http`, `CONNECT` tunnels for `https`.
            case http
            /// A SOCKS5 proxy, given the server's name to resolve (curl's `socks5h`), logged in to with user name
            /// and password when a ``Proxy/user`` is set.
            case socks5
            /// A SOCKS4 proxy: given an IPv4 address this end looks up (curl's `socks4`), or, when
            /// ``Proxy/resolvesNamesLocally`` is `false`, the server's name to resolve (SOCKS4a, curl's `socks4a`). A
            /// ``Proxy/user`` goes as the request's user ID; SOCKS4 has no password.
            case socks4

            /// Whether the proxy is a SOCKS proxy, through which every request opens a tunnel.
            public var isSOCKS: Bool { self != .http }
        }

        /// The protocol spoken with the proxy.
        public var kind: Kind
        /// The proxy's host name or address.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// The user name for the proxy's Basic authentication (HTTP), its user name and password login (SOCKS5), or the
        /// user ID of a SOCKS4 request.
        public var user: String?
        /// The password that goes with ``user``.
        public var password: String?
        /// For a SOCKS proxy: whether this end looks the server's name up and gives the proxy its address (curl's
        /// `socks5://` and `socks4://`), rather than the name for the proxy to resolve (`socks5h://` and `socks4a://`;
        /// the default): a name only this machine knows (`/etc/hosts`) is reached so. SOCKS4 carries IPv4 addresses
        /// alone.
        public var resolvesNamesLocally = false
        /// For an HTTP proxy: whether it is reached over TLS (curl's HTTPS proxy, `https://host:port`). The connection
        /// to the proxy is TLS, checked against the proxy's host name as ``tls`` says; an `https` request's TLS with its
        /// server then runs inside that, through the proxy's tunnel, and an `http` request goes to the proxy encrypted.
        public var usesTLS = false
        /// The TLS settings for the connection to an HTTPS proxy (``usesTLS``): trust roots, checks, client certificate
        /// (curl's `--proxy-cacert`, `--proxy-insecure`). `nil`, the default: the request's own (``HTTPClientOptions/tls``).
        /// Pinned public keys are the origin server's alone, here or there: never checked against the proxy.
        public var tls: TLSOptions?
        /// For an HTTP proxy: fields for the proxy alone (curl's `--proxy-header`), sent with each `CONNECT` that opens a
        /// tunnel and with each request it forwards, never to a server through a tunnel. A `Proxy-Authorization` here
        /// stands in for the one ``user`` and ``password`` make, a `Host` for the `CONNECT`'s. Fields that frame a message
        /// (`Content-Length`, `Transfer-Encoding`, `Connection` and the like) fail the load with
        /// ``Loader/LoadError/Code/unsupportedURL``.
        public var headerFields = HTTPFields()

        /// Fields that frame a message or change its connection, which ``headerFields`` may not set: two lengths, or a
        /// length and chunks, are a smuggled request.
        package static let framingFields: Set<HTTPField.Name> = [.contentLength, .transferEncoding, .connection, .upgrade, .te, .trailer, .expect]
        /// `Host` (swift-http-types keeps its name for HTTP/1's own use), which a proxy's field may give a `CONNECT`.
        package static let hostField = HTTPField.Name("Host")!

        /// A proxy at `host` and `port`, with credentials if given.
        public init(_ kind: Kind = .http, host: String, port: Int = 1080, user: String? = nil, password: String? = nil) {
            self.kind = kind
            self.host = host
            self.port = port
            self.user = user
            self.password = password
        }

        /// A proxy written as curl takes it: `http://user:password@host:port`, `https://host:port` (an HTTP proxy
        /// reached over TLS, ``usesTLS``; port 443 when none is given), `socks5h://host:port` (the proxy resolves the
        /// server's name; `socks5h://user:password@host:port` logs in), `socks5://host:port` (this end resolves it,
        /// ``resolvesNamesLocally``), `socks4a://[user@]host:port` (SOCKS4a: the proxy resolves the name),
        /// `socks4://[user@]host:port` (SOCKS4: this end resolves it to an IPv4 address), or `host:port` (the scheme
        /// `http://` assumed). The port is 1080 when none is given, but for `https://`. `nil` for any other scheme, or for
        /// text that names no host. User and password are percent-decoded.
        public init?(_ text: String) {
            let trimmed = text.trimmingSpaces()
            guard !trimmed.isEmpty else { return nil }
            let written = trimmed.contains("://") ? String(trimmed) : "http://" + trimmed
            guard let url = URL(string: written), let scheme = url.scheme?.lowercased(),
                  let host = url.host(percentEncoded: false), !host.isEmpty else { return nil }
            let kind: Kind
            switch scheme {
            case "http", "https": kind = .http
            case "socks5", "socks5h": kind = .socks5
            case "socks4", "socks4a": kind = .socks4
            default: return nil
            }
            let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            let port = url.port ?? (scheme == "https" ? 443 : 1080)
            guard (1...65535).contains(port) else { return nil }
            self.init(kind, host: bare.lowercased(), port: port, user: url.user(percentEncoded: false),
                      password: url.password(percentEncoded: false))
            resolvesNamesLocally = scheme == "socks5" || scheme == "socks4"
            usesTLS = scheme == "https"
        }

        /// The proxy curl would use for a URL of `scheme` from these environment variables: `http_proxy` for
        /// `http` (lowercase only, as curl: a CGI server sets `HTTP_PROXY` from a request's `Proxy` field),
        /// `https_proxy` or `HTTPS_PROXY` for `https`, then `all_proxy` or `ALL_PROXY`. `nil` when none is set
        /// or the value is not a proxy ``init(_:)`` reads.
        public static func fromEnvironment(_ environment: [String: String], scheme: String) -> Proxy? {
            environmentVariable(environment, scheme: scheme).flatMap { Proxy($0.value) }
        }

        /// The variable ``fromEnvironment(_:scheme:)`` reads for `scheme`, by name, with its value (not empty); `nil`
        /// when none is set, whether or not its value is a proxy ``init(_:)`` reads.
        package static func environmentVariable(_ environment: [String: String], scheme: String) -> (name: String, value: String)? {
            let names = scheme == "https" ? ["https_proxy", "HTTPS_PROXY"] : scheme == "http" ? ["http_proxy"] : []
            return (names + ["all_proxy", "ALL_PROXY"]).lazy.compactMap { name in environment[name].map { (name, $0) } }.first { !$0.1.isEmpty }
        }

        /// The hosts `no_proxy` or `NO_PROXY` names in `environment`, as ``HTTPClientOptions/noProxy`` takes them.
        public static func exceptions(fromEnvironment environment: [String: String]) -> [String] {
            exceptions(in: environment["no_proxy"] ?? environment["NO_PROXY"] ?? "")
        }

        /// The hosts a `no_proxy` value names, separated by commas or blanks, as curl reads them.
        public static func exceptions(in list: String) -> [String] {
            list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
        }

        /// Whether `host` (lowercase, IPv6 without brackets) is reached directly under `exceptions`: `*` names
        /// every host; an address is named by itself or by a block that holds it (`10.0.0.0/8`, `fd00::/8`), never
        /// by a suffix; any other entry names itself and, as a domain, the hosts beneath it (`example.com` and
        /// `.example.com` both cover `www.example.com`), a final dot left out on either side: as curl reads
        /// `--noproxy` (blocks since curl 7.86).
        package static func bypasses(_ host: String, exceptions: [String]) -> Bool {
            let name = host.hasSuffix(".") ? String(host.dropLast()) : host
            let address = IPAddressText.bytes(name)
            return exceptions.contains { entry in
                var entry = entry.lowercased()
                if entry == "*" { return true }
                if let address { return Self.address(address, isIn: entry.filter { $0 != "[" && $0 != "]" }) }
                if entry.hasPrefix(".") { entry.removeFirst() }
                if entry.hasSuffix(".") { entry.removeLast() }
                guard !entry.isEmpty else { return false }
                return name == entry || name.hasSuffix("." + entry)
            }
        }


        /// Whether `address` is the one `block` writes, or within it when it has a prefix length (`/n`).
        private static func address(_ address: [UInt8], isIn block: String) -> Bool {
            let parts = block.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let network = IPAddressText.bytes(String(parts[0])), network.count == address.count else { return false }
            guard let bits = parts.count == 2 ? Int(parts[1]) : network.count * 8, (0...network.count * 8).contains(bits) else { return false }
            for index in 0..<network.count where bits > index * 8 {
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - min(8, bits - index * 8)))
                if address[index] & mask != network[index] & mask { return false }
            }
            return true
        }

        /// ``user`` and ``password`` (empty when not given) as a credential; `nil` without a user.
        var credential: Credential? {
            user.map { Credential(user: $0, password: password ?? "") }
        }

        /// The value of a `Proxy-Authorization` field for ``credential``; `nil` without one, or for a SOCKS proxy.
        var authorization: String? {
            kind == .http ? credential?.basicAuthorization : nil
        }

        /// `host:port` as a request target or a `Host` field has it (an IPv6 address in brackets).
        static func authority(_ host: String, _ port: Int) -> String {
            (host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host) + ":" + String(port)
        }
    }
}
