import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader

/// Cookies in memory, kept and sent by RFC 6265's rules: a session's ``Loader/CookieStore`` for `http`,
/// `https`, `ws` and `wss` URLs. Plain `http` and `ws` to this machine (`localhost`, 127.0.0.0/8, `::1`) count as secure.
///
/// ```swift
/// var configuration = LoaderSession.Configuration.default
/// configuration.cookieStore = CookieJar()
/// ```
///
/// A cookie whose `Domain` is a public suffix (`com`, `co.uk`, per ``PublicSuffixList``) or does not cover
/// the host that set it is refused, as is a `Secure` one set over plain `http` (RFC 6265bis), one whose name
/// and value pass 4,096 bytes, one from plain `http` that would replace or shadow a `Secure` one, and a
/// `__Secure-` or `__Host-` one that breaks its prefix's rules. Lifetimes are capped at 400 days. The jar keeps at
/// most ``maximumCookiesPerDomain`` cookies per registrable domain (dropping its plain cookies before its `Secure`
/// ones) and ``maximumCookies`` in all, the earliest created first. Nothing is written to disk (the `DiskStores`
/// library's `DiskCookieJar` keeps a jar's lasting cookies in a database).
public final class CookieJar: CookieStore {
    /// The most cookies one registrable domain (`example.co.uk`) keeps.
    public static let maximumCookiesPerDomain = 180
    /// The most cookies the jar keeps.
    public static let maximumCookies = 3_000
    /// The most bytes of a cookie's name and value together.
    public static let maximumCookieSize = 4_096

    private let publicSuffixes: PublicSuffixList
    /// The cookies, each with its registrable domain (for the per-site limit), in the order first stored.
    private let stored = Locked<[(cookie: Cookie, site: String)]>([])
    /// The clock, for tests of expiry.
    private let now: @Sendable () -> Date

    /// Makes an empty jar.
    /// - Parameter publicSuffixes: The list that tells which domains may not take cookies.
    public convenience init(publicSuffixes: PublicSuffixList = .shipped) {
        self.init(publicSuffixes: publicSuffixes, clock: { Date() })
    }

    init(publicSuffixes: PublicSuffixList, clock: @escaping @Sendable () -> Date) {
        self.publicSuffixes = publicSuffixes
        self.now = clock
    }

    /// Every cookie kept and not expired, in the order they were first stored.
    public var cookies: [Cookie] {
        let now = now()
        return stored.withLock { $0.map(\.cookie).filter { !$0.isExpired(at: now) } }
    }

    /// The cookies a request to `url` would carry, in the order of its `Cookie` field: longer paths first,
    /// then the earlier stored.
    public func cookies(for url: URL) -> [Cookie] {
        guard let (host, path, secure) = Self.target(url) else { return [] }
        let now = now()
        let matching = stored.withLock { entries -> [Cookie] in
            entries.removeAll { $0.cookie.isExpired(at: now) }
            return entries.lazy.map(\.cookie).filter { Self.goes($0, toHost: host, path: path, secure: secure) }
        }
        return matching.sorted(by: Self.sentFirst)
    }

    /// Whether `cookie` goes with a request to `host` and `path`, over a secure connection or not.
    private static func goes(_ cookie: Cookie, toHost host: String, path: String, secure: Bool) -> Bool {
        let hostMatches = cookie.isHostOnly ? host == cookie.domain : CookieMatching.host(host, matches: cookie.domain)
        return hostMatches && CookieMatching.path(path, matches: cookie.path) && (secure || !cookie.isSecure)
    }

    /// The order of a `Cookie` field: longer paths first, then the earlier stored.
    private static func sentFirst(_ a: Cookie, _ b: Cookie) -> Bool {
        a.path.utf8.count != b.path.utf8.count ? a.path.utf8.count > b.path.utf8.count : a.created < b.created
    }

    /// Stores `cookie` as it is, as from a file the user gave (``NetscapeCookieFile``): the rules for what a
    /// response may set do not apply, the jar's limits do. It replaces a cookie of the same name, domain and
    /// path; an expired one only removes that namesake.
    public func insert(_ cookie: Cookie) {
        guard cookie.name.utf8.count + cookie.value.utf8.count <= Self.maximumCookieSize else { return }
        store(cookie, fromSecureOrigin: true, now: now())
    }

    /// Removes every cookie.
    public func removeAll() {
        stored.withLock { $0.removeAll() }
    }

    // MARK: CookieStore

    /// `name=value` for each of ``cookies(for:)``, joined by `; `; `nil` when there are none.
    public func cookieField(for url: URL) -> String? {
        let cookies = cookies(for: url)
        guard !cookies.isEmpty else { return nil }
        return cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Stores each cookie `values` sets that the rules allow; one that has expired removes its namesake.
    public func save(setCookie values: [String], from url: URL) {
        guard let (host, path, secure) = Self.target(url) else { return }
        let now = now()
        for value in values {
            guard let parsed = SetCookie(value, now: now), let cookie = cookie(parsed, host: host, path: path, secure: secure, now: now) else { continue }
            store(cookie, fromSecureOrigin: secure, now: now)
        }
    }

    // MARK: The storage model (RFC 6265 §5.3)

    /// The cookie `parsed` makes for a response from `host`, or `nil` if the rules refuse it.
    private func cookie(_ parsed: SetCookie, host: String, path: String, secure: Bool, now: Date) -> Cookie? {
        guard parsed.name.utf8.count + parsed.value.utf8.count <= Self.maximumCookieSize else { return nil }
        // A `Secure` cookie only from a secure origin: a plain-text response could otherwise plant one.
        if parsed.isSecure, !secure { return nil }
        guard Self.keepsNamePrefix(parsed) else { return nil }
        var domain = host
        var hostOnly = true
        if var attribute = parsed.domain {
            if publicSuffixes.isPublicSuffix(attribute) {
                // A public suffix may set a cookie for itself alone (a host such as `localhost`), never for
                // the sites beneath it.
                guard attribute == host else { return nil }
                attribute = host
            } else {
                guard CookieMatching.host(host, matches: attribute) else { return nil }
                hostOnly = false
            }
            domain = attribute
        }
        return Cookie(name: parsed.name, value: parsed.value, domain: domain, isHostOnly: hostOnly,
                      path: parsed.path ?? CookieMatching.defaultPath(path), expires: parsed.expires,
                      isSecure: parsed.isSecure, isHTTPOnly: parsed.isHTTPOnly, sameSite: parsed.sameSite, created: now)
    }

    /// Whether a cookie named `__Secure-…` or `__Host-…` keeps the promise its name makes (RFC 6265bis §4.1.3):
    /// `Secure` for both, and for `__Host-` no `Domain` and `Path=/`, so that only the very host, over a secure
    /// connection, can have set it. The prefixes match without regard to case.
    static func keepsNamePrefix(_ parsed: SetCookie) -> Bool {
        if hasPrefix(parsed.name, ignoringASCIICase: "__host-") {
            return parsed.isSecure && parsed.domain == nil && parsed.path == "/"
        }
        return parsed.isSecure || !hasPrefix(parsed.name, ignoringASCIICase: "__secure-")
    }

    /// Whether `name` starts with `lowercasePrefix`, ASCII letters matching in either case.
    private static func hasPrefix(_ name: String, ignoringASCIICase lowercasePrefix: String) -> Bool {
        let head = name.utf8.prefix(lowercasePrefix.utf8.count)
        return head.count == lowercasePrefix.utf8.count
            && zip(head, lowercasePrefix.utf8).allSatisfy { (($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0) == $1 }
    }

    private func store(_ cookie: Cookie, fromSecureOrigin secure: Bool, now: Date) {
        let site = publicSuffixes.registrableDomain(of: cookie.domain) ?? cookie.domain
        stored.withLock { entries in
            var cookie = cookie
            // Plain `http` neither replaces nor shadows a `Secure` cookie of that name whose domain and path
            // overlap the new one's (RFC 6265bis §5.7): the secure site set it. The site itself may, over
            // `https` (a logout's `Max-Age=0` without `Secure`).
            if !secure, entries.contains(where: { Self.shadows(cookie, secure: $0.cookie) }) { return }
            if let old = entries.firstIndex(where: { $0.cookie.name == cookie.name && $0.cookie.domain == cookie.domain && $0.cookie.path == cookie.path }) {
                // In its place, with its creation time: the order cookies are sent in stays as it was.
                cookie.created = entries[old].cookie.created
                entries[old].cookie = cookie
            } else {
                entries.append((cookie, site))
            }
            entries.removeAll { $0.cookie.isExpired(at: now) }
            // Beyond the limits the earliest created go first (the newest is what the site just set), and
            // within a site the plain ones before any `Secure` one, which plain `http` could not have pushed out.
            if entries.count(where: { $0.site == site }) > Self.maximumCookiesPerDomain,
               let first = entries.firstIndex(where: { $0.site == site && !$0.cookie.isSecure }) ?? entries.firstIndex(where: { $0.site == site }) {
                entries.remove(at: first)
            }
            if entries.count > Self.maximumCookies { entries.removeFirst(entries.count - Self.maximumCookies) }
        }
    }

    /// Whether `cookie`, set over plain `http`, would stand in for `existing`, a `Secure` one: same name, one
    /// domain covering the other, and the new path within the old.
    private static func shadows(_ cookie: Cookie, secure existing: Cookie) -> Bool {
        existing.isSecure && existing.name == cookie.name
            && (CookieMatching.host(cookie.domain, matches: existing.domain) || CookieMatching.host(existing.domain, matches: cookie.domain))
            && CookieMatching.path(cookie.path, matches: existing.path)
    }

    /// The lowercased host, path and whether the connection is secure, for a URL cookies apply to.
    private static func target(_ url: URL) -> (String, String, Bool)? {
        guard let scheme = url.scheme?.lowercased(), ["http", "https", "ws", "wss"].contains(scheme),
              var host = url.host(percentEncoded: false)?.lowercased(), !host.isEmpty else { return nil }
        if host.hasSuffix(".") { host.removeLast() }
        let path = url.path(percentEncoded: true)
        return (host, path.isEmpty ? "/" : path, scheme == "https" || scheme == "wss" || isLoopback(host))
    }

    /// Whether `host` names this machine (`localhost`, an IPv4 address in 127.0.0.0/8, `::1`), whose plain `http` is as
    /// secure as `https` (W3C Secure Contexts' "potentially trustworthy"): `Secure` cookies of a development server
    /// are kept and sent, as curl's are. Addresses are read as the connection reads them (`inet_pton`), so a name
    /// that merely looks like one (`127.+0.0.1`) is not taken; nor is `*.localhost`, as curl's secure-context rule
    /// leaves it out, though the HTTP handler connects it to this machine.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard inet_pton(AF_INET6, literal, &v6) == 1 else { return false }
        return withUnsafeBytes(of: &v6) { bytes in bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1 }
    }
}
