import FoundationEssentials

/// Where a session keeps HTTP responses for later requests (``LoaderSession/Configuration/responseCache``).
///
/// The session's cache layer decides, by RFC 9111's rules, what may be stored, when a stored response may answer
/// a request as it is and when it must be validated with the server first; a store only keeps entries. One
/// entry per key: the key is the request's URL without its fragment, for `GET` requests. A store decides what
/// to keep (its capacity, ``maximumEntrySize``) and may drop any entry at any time.
///
/// ``MemoryResponseCache`` keeps entries in memory; the `DiskStores` library's `DiskResponseCache` keeps them
/// in an SQLite database. Sessions given the same store share its entries.
public protocol ResponseCache: Sendable {
    /// The largest body, in bytes, the store takes: the cache layer does not collect a body larger than this.
    var maximumEntrySize: Int { get }
    /// The entry stored for `key`, or `nil`.
    func cachedResponse(for key: String) async -> CachedResponse?
    /// Stores `response` for `key`, replacing any entry there; the store may decline it.
    func store(_ response: CachedResponse, for key: String) async
    /// Removes the entry for `key`, if any.
    func removeCachedResponse(for key: String) async
    /// Removes every entry.
    func removeAllCachedResponses() async
}

extension CachedResponse {
    /// The key under which a store keeps the response for `url`: the URL as RFC 9110 (§4.2.3) compares them, its
    /// scheme and host lowercased, a default port left out and an empty path written `/`, so that a change through one
    /// spelling voids the entry of another; without its fragment, which never reaches a server, and without user and
    /// password, which a store on disk would otherwise keep in plain text (a request that authenticates carries
    /// `Authorization` and passes by the cache).
    public static func key(for url: URL) -> String {
        guard var parts = URLComponents(url: url.absoluteURL, resolvingAgainstBaseURL: false) else {
            let text = url.absoluteStringHidingPassword
            return String(text[..<(text.firstIndex(of: "#") ?? text.endIndex)])
        }
        parts.fragment = nil
        parts.percentEncodedUser = nil
        parts.percentEncodedPassword = nil
        let scheme = parts.scheme?.lowercased()
        parts.scheme = scheme
        if let host = parts.percentEncodedHost {
            parts.percentEncodedHost = host.lowercased()
            if parts.percentEncodedPath.isEmpty { parts.percentEncodedPath = "/" }
        }
        if let port = parts.port, let scheme, port == RedirectMiddleware.defaultPorts[scheme] { parts.port = nil }
        return parts.string ?? url.absoluteStringHidingPassword
    }
}
