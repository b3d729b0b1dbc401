/// RFC 6265's matching rules (§5.1.3, §5.1.4), on lowercased hosts and on paths.
enum CookieMatching {
    /// Whether `host` domain-matches `domain`: the same, or a host name ending in `.domain` (never an IP
    /// address, whose dotted parts are not domains).
    static func host(_ host: String, matches domain: String) -> Bool {
        if host == domain { return true }
        guard host.hasSuffix(domain), !isIPAddress(host) else { return false }
        return host.utf8.dropLast(domain.utf8.count).last == UInt8(ascii: ".")
    }

    /// Whether `requestPath` is `cookiePath` or beneath it.
    static func path(_ requestPath: String, matches cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    /// The path a cookie without a `Path` gets: the request path up to its last `/` (not included), or `/`.
    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let last = requestPath.lastIndex(of: "/"), last != requestPath.startIndex else { return "/" }
        return String(requestPath[..<last])
    }

    /// An IPv4 address (digits and dots) or an IPv6 one (a colon).
    static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || (!host.isEmpty && host.utf8.allSatisfy { $0 == UInt8(ascii: ".") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
    }
}
