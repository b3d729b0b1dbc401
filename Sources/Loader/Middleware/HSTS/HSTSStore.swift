import FoundationEssentials
import HTTPTypes
import Synchronization

/// The hosts that are to be reached over HTTPS alone (HTTP Strict Transport Security, RFC 6797), as their servers
/// asked with a `Strict-Transport-Security` field over HTTPS.
///
/// A session keeps one in memory by default (``LoaderSession/Configuration/hstsStore``); sessions given the same
/// store share what it learns. ``entries`` and ``init(entries:)`` let an app keep it between runs (`loadurl --hsts`
/// keeps it in curl's file format).
public final class HSTSStore: Sendable {
    /// One host's policy.
    public struct Entry: Sendable, Hashable {
        /// The host, lowercase, without a final dot.
        public var host: String
        /// Whether the hosts beneath it are covered too.
        public var includesSubdomains: Bool
        /// When the policy ends; `nil` for never (curl's `unlimited`).
        public var expires: Date?

        /// An entry for `host` (lowercased, a final dot dropped).
        public init(host: String, includesSubdomains: Bool, expires: Date?) {
            self.host = HSTSStore.normalized(host)
            self.includesSubdomains = includesSubdomains
            self.expires = expires
        }
    }

    private let policies: Mutex<[String: Entry]>
    /// How many policies are kept: a request looks them up only when there are any, without the lock.
    private let count = Atomic<Int>(0)

    /// A store holding `entries` (the expired ones left out).
    public init(entries: [Entry] = []) {
        let now = Date()
        var byHost: [String: Entry] = [:]
        for entry in entries where entry.expires.map({ $0 > now }) ?? true && !entry.host.isEmpty { byHost[entry.host] = entry }
        policies = Mutex(byHost)
        count.store(byHost.count, ordering: .relaxed)
    }

    /// Whether the store holds no policy (an expired one still counts until a lookup drops it).
    var isEmpty: Bool { count.load(ordering: .relaxed) == 0 }

    /// The policies in force, by host.
    public var entries: [Entry] {
        let now = Date()
        return policies.withLock { $0.values.filter { $0.expires.map { $0 > now } ?? true } }.sorted { $0.host < $1.host }
    }

    /// Whether a request to `host` must go over HTTPS: a policy for the host itself, or for a domain above it
    /// that includes its subdomains (RFC 6797 §8.2). Never for an IP address.
    public func requiresHTTPS(_ host: String, at now: Date = Date()) -> Bool {
        guard !isEmpty else { return false }
        let name = Self.normalized(host)
        guard !name.isEmpty, !IPAddressText.isAddress(name) else { return false }
        return policies.withLock { policies in
            var domain = Substring(name)
            var congruent = true
            while true {
                if let entry = policies[String(domain)] {
                    if let expires = entry.expires, expires <= now {
                        policies[String(domain)] = nil
                        count.store(policies.count, ordering: .relaxed)
                    } else if congruent || entry.includesSubdomains {
                        return true
                    }
                }
                guard let dot = domain.firstIndex(of: ".") else { return false }
                domain = domain[domain.index(after: dot)...]
                congruent = false
            }
        }
    }

    /// `url` as it must go under the policies: an `http` URL of a host they cover as `https`, a `ws` one as `wss` (port 80,
    /// when written, as 443; any other port kept); `nil` when it goes as it is. Never `nil` for a covered host: a URL
    /// that will not take the port's rewrite still gets its scheme's.
    package func secureURL(for url: URL) -> URL? {
        guard !isEmpty else { return nil }
        let url = url.absoluteURL
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "ws",
              let host = url.host(percentEncoded: false), requiresHTTPS(host) else { return nil }
        let secure = scheme == "ws" ? "wss" : "https"
        if var components = URLComponents(url: url, resolvingAgainstBaseURL: true) {
            components.scheme = secure
            if components.port == 80 { components.port = 443 }
            if let rewritten = components.url { return rewritten }
        }
        let text = url.absoluteString
        return URL(string: secure + text.dropFirst(scheme.count)) ?? url
    }

    /// Takes the policy of `response`'s first `Strict-Transport-Security` field (RFC 6797 §8.1: a second is ignored) if
    /// the response came over TLS, `https` or `wss` (a WebSocket handshake's answer); one over plain HTTP is ignored, as
    /// the RFC asks.
    package func record(from response: LoadResponse) {
        let url = response.url
        guard let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "wss",
              let value = response.headerFields[values: Self.field].first, let host = url.host(percentEncoded: false) else { return }
        record(value, for: host)
    }

    /// The field that states a policy.
    static let field = HTTPField.Name("Strict-Transport-Security")!

    /// Takes the policy a `Strict-Transport-Security` field of `value` states for `host`, from a response that came
    /// over HTTPS: kept (or renewed) for its `max-age`, or ended by a `max-age` of 0. A value that states no policy,
    /// and any for an IP address, changes nothing.
    public func record(_ value: String, for host: String, at now: Date = Date()) {
        guard let header = HSTSHeader(value) else { return }
        let name = Self.normalized(host)
        guard !name.isEmpty, !IPAddressText.isAddress(name) else { return }
        policies.withLock { policies in
            if header.maxAge == 0 {
                policies[name] = nil
            } else {
                // At most some 1,100 years: a max-age past what a date holds is for ever, near enough.
                let expires = now.addingTimeInterval(min(TimeInterval(header.maxAge), 35e9))
                policies[name] = Entry(host: name, includesSubdomains: header.includesSubdomains, expires: expires)
            }
            count.store(policies.count, ordering: .relaxed)
        }
    }

    /// `host` lowercased, without a final dot or IPv6 brackets.
    static func normalized(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        return name
    }
}
