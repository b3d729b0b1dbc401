import FoundationEssentials
import Loader

extension HTTPClientOptions {
    /// An HTTP proxy that requests go through (``HTTPClientOptions/httpProxy``, ``HTTPClientOptions/httpsProxy``),
    /// as curl's `-x http://host:port`.
    ///
    /// An `http` request goes to the proxy with the whole URL as its target; an `https` one asks the proxy
    /// for a tunnel (`CONNECT host:port`) and speaks TLS with the server inside it, so the proxy sees only the
    /// host and port. Credentials go in a `Proxy-Authorization` field, Basic, to the proxy alone.
    public struct Proxy: Sendable, Hashable {
        /// The proxy's host name or address.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// The user name for the proxy's Basic authentication, if it asks for one.
        public var user: String?
        /// The password that goes with ``user``.
        public var password: String?

        /// A proxy at `host` and `port`, with credentials if given.
        public init(host: String, port: Int = 1080, user: String? = nil, password: String? = nil) {
            self.host = host
            self.port = port
            self.user = user
            self.password = password
        }

        /// A proxy written as curl takes it: `http://user:password@host:port`, or `host:port` (the scheme
        /// `http://` assumed, and the port 1080 when none is given). `nil` for any other scheme, or for text
        /// that names no host. User and password are percent-decoded.
        public init?(_ text: String) {
            let trimmed = text.trimmingSpaces()
            guard !trimmed.isEmpty else { return nil }
            let written = trimmed.contains("://") ? String(trimmed) : "http://" + trimmed
            guard let url = URL(string: written), url.scheme?.lowercased() == "http",
                  let host = url.host(percentEncoded: false), !host.isEmpty else { return nil }
            let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            guard (1...65535).contains(url.port ?? 1080) else { return nil }
            self.init(host: bare.lowercased(), port: url.port ?? 1080, user: url.user(percentEncoded: false),
                      password: url.password(percentEncoded: false))
        }

        /// The proxy curl would use for a URL of `scheme` from these environment variables: `http_proxy` for
        /// `http` (lowercase only, as curl: a CGI server sets `HTTP_PROXY` from a request's `Proxy` field),
        /// `https_proxy` or `HTTPS_PROXY` for `https`, then `all_proxy` or `ALL_PROXY`. `nil` when none is set
        /// or the value is not an `http://` proxy.
        public static func fromEnvironment(_ environment: [String: String], scheme: String) -> Proxy? {
            let names = scheme == "https" ? ["https_proxy", "HTTPS_PROXY"] : scheme == "http" ? ["http_proxy"] : []
            let value = (names + ["all_proxy", "ALL_PROXY"]).lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
            return value.flatMap(Proxy.init)
        }

        /// The hosts `no_proxy` or `NO_PROXY` names in `environment`, comma-separated, as ``HTTPClientOptions/noProxy`` takes them.
        public static func exceptions(fromEnvironment environment: [String: String]) -> [String] {
            let value = environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
            return value.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }
        }

        /// Whether `host` (lowercase, IPv6 without brackets) is reached directly under `exceptions`: `*` names
        /// every host; any other entry names itself and, as a domain, the hosts beneath it (`example.com` and
        /// `.example.com` both cover `www.example.com`), as curl reads `--noproxy`.
        static func bypasses(_ host: String, exceptions: [String]) -> Bool {
            exceptions.contains { entry in
                var entry = entry.lowercased()
                if entry == "*" { return true }
                if entry.hasPrefix(".") { entry.removeFirst() }
                if entry.hasPrefix("["), entry.hasSuffix("]") { entry = String(entry.dropFirst().dropLast()) }
                guard !entry.isEmpty else { return false }
                return host == entry || host.hasSuffix("." + entry)
            }
        }

        /// The value of a `Proxy-Authorization` field for ``user`` and ``password``; `nil` without a user.
        var authorization: String? {
            guard let user else { return nil }
            return "Basic " + Data("\(user):\(password ?? "")".utf8).base64EncodedString()
        }

        /// `host:port` as a request target or a `Host` field has it (an IPv6 address in brackets).
        static func authority(_ host: String, _ port: Int) -> String {
            (host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host) + ":" + String(port)
        }
    }
}
