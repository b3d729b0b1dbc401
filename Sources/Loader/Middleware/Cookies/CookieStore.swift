import FoundationEssentials

/// Where a session keeps cookies (``LoaderSession/Configuration/cookieStore``): its cookie layer asks the store
/// for each request's `Cookie` field and hands it every response's `Set-Cookie` fields, redirects and
/// authentication challenges included.
///
/// The `Cookies` library's `CookieJar` is one, with RFC 6265's rules and the Public Suffix List. A store
/// decides which URLs take part (`CookieJar`: `http`, `https`, `ws` and `wss`). Both calls come from any
/// thread, once per request and response: they must be thread-safe and must not block for long.
public protocol CookieStore: Sendable {
    /// The value of the `Cookie` field for a request to `url` (`name=value; name2=value2`), or `nil` to send none.
    func cookieField(for url: URL) -> String?
    /// Takes the `Set-Cookie` field values of a response from `url`, in the order the server sent them.
    func save(setCookie values: [String], from url: URL)
}
