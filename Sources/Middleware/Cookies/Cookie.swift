import FoundationEssentials

/// One stored cookie, as RFC 6265's storage model (§5.3) keeps it.
public struct Cookie: Sendable, Hashable {
    /// The cookie's name.
    public var name: String
    /// Its value, as the server sent it.
    public var value: String
    /// The host it belongs to (``isHostOnly``) or the domain whose hosts it goes to, lowercased, without a
    /// leading dot.
    public var domain: String
    /// Whether it goes to ``domain`` alone (no `Domain` attribute was given), not to its subdomains.
    public var isHostOnly: Bool
    /// The path it goes to, and the paths beneath it.
    public var path: String
    /// When it expires; `nil` for a session cookie, kept until its jar goes.
    public var expires: Date?
    /// Whether it goes over secure connections only (`https`, `wss`).
    public var isSecure: Bool
    /// Whether the server marked it `HttpOnly` (kept from scripts; every request of the loader is HTTP's).
    public var isHTTPOnly: Bool
    /// The `SameSite` attribute as sent (`Strict`, `Lax`, `None`), if any; kept for the app, not enforced:
    /// the loader makes no cross-site requests of its own.
    public var sameSite: String?
    /// When it was first stored (a replacement keeps the first one's time): orders cookies of equal paths.
    public var created: Date

    /// Makes a cookie.
    ///
    /// `domain` is taken as a cookie file or HTTPCookie writes it: in any case, and with a leading dot for a cookie
    /// that goes to the domain's hosts too (which makes it not ``isHostOnly``); it is kept lowercased, without dots
    /// at its ends, as the jar compares it with hosts.
    public init(name: String, value: String, domain: String, isHostOnly: Bool = true, path: String = "/",
                expires: Date? = nil, isSecure: Bool = false, isHTTPOnly: Bool = false, sameSite: String? = nil,
                created: Date = Date()) {
        var domain = Substring(domain.lowercased())
        let leadingDot = domain.hasPrefix(".")
        if leadingDot { domain = domain.dropFirst() }
        if domain.hasSuffix(".") { domain = domain.dropLast() }
        self.name = name
        self.value = value
        self.domain = String(domain)
        self.isHostOnly = isHostOnly && !leadingDot
        self.path = path
        self.expires = expires
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.created = created
    }

    /// Whether it has expired at `now`.
    public func isExpired(at now: Date) -> Bool {
        expires.map { $0 <= now } ?? false
    }
}
