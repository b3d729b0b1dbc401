import FoundationEssentials
import HTTPTypes

/// Follows redirects: those a handler proposes, and HTTP 301, 302, 303, 307 and 308 with `Location`.
///
/// The session puts it below the app's own middleware (see ``LoaderSession/Configuration/redirectLimit``).
/// Method and body follow RFC 9110 §15.4: 303 turns any method but `HEAD` into a body-less `GET`; 301
/// and 302 turn `POST` into `GET` (as every browser and URLSession do); 307 and 308 keep both. When the
/// origin changes, `Authorization`, `Cookie` and `Proxy-Authorization` are removed (from a handler's proposed
/// request too). A server's `Location` is followed only within the request's own scheme or to the schemes
/// in ``allowedSchemes``, as curl's are: a server must not send a load to `file:` (reading a local file, or
/// with a kept `PUT` body writing one); a request that keeps its body (307, 308, a `PUT` after 301) goes on to
/// `http` and `https` alone. To the same origin the URL's user and password go on. The task's delegates may change or refuse each redirect; a refused redirect returns the redirect
/// response itself. A chain that comes back to a URL it visited is followed like any other, up to the limit
/// (a server may redirect to the same URL while it prepares a resource).
public struct RedirectMiddleware: LoadMiddleware {
    /// The most redirects one load follows before failing with ``LoadError/Code/httpTooManyRedirects``.
    public var limit: Int
    /// The schemes (lowercase) a server's `Location` may lead to besides the request's own; a redirect
    /// elsewhere fails with ``LoadError/Code/unsupportedURL``. A handler's proposed redirect is the app's own
    /// choice and may go to any scheme (its credentials are still dropped when it changes origin; a task
    /// delegate's `willPerformRedirection` may put them back).
    public var allowedSchemes: Set<String>

    /// The session's HSTS store (set by the session): a hop sent as `https` though its URL says `http` is judged from
    /// where it went, its `Location` resolved against that and its credentials kept on that origin.
    var hstsStore: HSTSStore?

    /// The schemes curl follows by default: `http`, `https` and `ftp`.
    public static let defaultAllowedSchemes: Set<String> = ["http", "https", "ftp"]

    /// Makes the middleware.
    /// - Parameters:
    ///   - limit: The most redirects one load follows.
    ///   - allowedSchemes: The schemes a server's `Location` may lead to.
    public init(limit: Int = 16, allowedSchemes: Set<String> = Self.defaultAllowedSchemes) {
        self.limit = limit
        self.allowedSchemes = Set(allowedSchemes.map { $0.lowercased() })
    }

    /// Loads `request`, following redirects up to the limit.
    public func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await loadSplit(request, context: context, next: next)
    }

    /// Follows `first`'s redirect to `firstProposal`, and any after it.
    @inline(never)
    private func follow(_ first: LoadResult, to firstProposal: LoadRequest, from request: LoadRequest,
                        context: LoadContext, next: LoadNext) async throws -> LoadResult {
        var current = request
        var result = first
        var proposed = firstProposal
        var hops = 0
        while true {
            guard hops < limit else {
                result.body.discard()
                throw LoadError(.httpTooManyRedirects, url: current.url, reason: "more than \(limit) redirects",
                                underlying: UnfollowedRedirect(response: result.response))
            }
            let accepted: LoadRequest?
            do {
                accepted = try await context.task.willRedirect(result.response, to: proposed)
            } catch {
                result.body.discard()
                throw error
            }
            guard let accepted else { return result }
            result.body.discard()
            // Checked on the request the delegates accepted, not the one proposed: they may have refused the redirect
            // (its response is then the result) or given a body that can be sent.
            if let body = accepted.body, !body.canBeSentAgain {
                let status = result.response.status.map { "the \($0.code) redirect" } ?? "the redirect"
                throw body.notSentAgain(to: current.url, for: "\(status) to \(accepted.url.absoluteStringHidingPassword)")
            }
            hops += 1
            current = accepted
            result = try await next(current)
            guard let again = try redirect(for: result, from: current) else { return result }
            proposed = again
        }
    }

    /// The HTTP statuses that redirect, with a `Location` (for loads, and WebSocket handshakes).
    package static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Whether `result` may be a redirect: proposed by the handler, or a redirect status with `Location`.
    static func mayRedirect(_ result: LoadResult) -> Bool {
        result.redirectRequest != nil || isRedirect(result.response)
    }

    /// Whether `response` redirects by its status and `Location` (HTTP's way; a handler may propose one instead).
    package static func isRedirect(_ response: LoadResponse) -> Bool {
        guard let status = response.status, redirectStatuses.contains(status.code) else { return false }
        return response.headerFields.contains(.location)
    }

    /// The request a result redirects to, or `nil` if it is not a redirect. Throws, having discarded the
    /// result's body, if a server's `Location` is not a URL or leads to a scheme not allowed.
    @inline(never)
    func redirect(for result: LoadResult, from request: LoadRequest) throws(LoadError) -> LoadRequest? {
        // Where the request went: as HSTS sent it, when it did.
        let origin = hstsStore?.secureURL(for: request.url) ?? request.url
        if var proposed = result.redirectRequest {
            Self.leaveBehind(in: &proposed, from: origin)
            return proposed
        }
        // The first Location only: the fields' subscript would join several with ", " into one URL. An empty one
        // is no redirect, as for curl: the response is the result.
        guard Self.mayRedirect(result), let status = result.response.status,
              let location = result.response.headerFields[values: .location].first, !location.isEmpty
        else { return nil }
        guard let target = Self.target(of: location, from: origin) else {
            result.body.discard()
            throw LoadError(.badServerResponse, url: request.url,
                            reason: "the redirect's Location '\(location.prefix(200))' is not a URL", underlying: UnfollowedRedirect(response: result.response))
        }
        guard let scheme = target.scheme?.lowercased(), scheme == request.scheme || scheme == origin.scheme || allowedSchemes.contains(scheme) else {
            result.body.discard()
            let allowed = allowedSchemes.sorted().joined(separator: ", ")
            throw LoadError(.unsupportedURL, url: request.url,
                            reason: "the redirect to \(target.absoluteStringHidingPassword) is not followed: a server may redirect only within \(request.scheme): or to \(allowed)",
                            underlying: UnfollowedRedirect(response: result.response))
        }
        var next = request
        next.url = target
        let keepsMethod = status.code == 307 || status.code == 308
        if !keepsMethod, status.code == 303 ? request.method != .head : request.method == .post {
            next.method = .get
            next.body = nil
            // The fields that describe the body gone with it (Fetch's request-body-header names, and its framing).
            for name in [HTTPField.Name.contentType, .contentLength, .transferEncoding, .contentEncoding, .contentLanguage, .contentLocation] {
                next.headerFields[name] = nil
            }
        }
        // A body goes on to HTTP alone: an FTP handler would store it (`STOR`) on whatever server the Location names.
        if next.body != nil, scheme != "http", scheme != "https" {
            result.body.discard()
            throw LoadError(.unsupportedURL, url: request.url,
                            reason: "the \(status.code) redirect to \(target.absoluteStringHidingPassword) is not followed: it would send the request's body to \(scheme):",
                            underlying: UnfollowedRedirect(response: result.response))
        }
        Self.leaveBehind(in: &next, from: origin)
        return next
    }

    /// The URL `location` names, resolved against `base`; spaces, controls, bytes past ASCII and the like, which
    /// servers send unencoded, percent-encoded first as curl and browsers do (``Foundation/URL/init(leniently:relativeTo:)``),
    /// its escapes kept. `nil` if it still is not a URL.
    /// A `Location` without a fragment takes the one of `base` (RFC 9110 §10.2.2).
    package static func target(of location: String, from base: URL) -> URL? {
        guard let target = URL(leniently: location, relativeTo: base)?.absoluteURL else { return nil }
        guard target.fragment == nil, let fragment = base.fragment(percentEncoded: true) else { return target }
        return URL(string: target.absoluteString + "#" + fragment) ?? target
    }

    private static let host = HTTPField.Name("Host")!

    /// Removes from `next`, a redirect's request from `origin`, what must not go to its URL: credentials to another
    /// origin, and a caller's own `Host`, which names the first server, to another host (curl leaves it out alike).
    /// To the same origin the URL's user and password go on, as curl's do: a server's `Location` is seldom written
    /// with them (`/dir` to `http://host/dir/`), and the next hop's challenge is answered with them.
    package static func leaveBehind(in next: inout LoadRequest, from origin: URL) {
        if !sameOrigin(origin, next.url) {
            dropCredentials(from: &next)
        } else if next.url.user == nil, origin.user != nil, let url = withUserInfo(of: origin, on: next.url) {
            next.url = url
        }
        if next.url.host?.lowercased() != origin.host?.lowercased() { next.headerFields[host] = nil }
    }

    /// `url` with the user and password of `origin`.
    private static func withUserInfo(of origin: URL, on url: URL) -> URL? {
        guard let from = URLComponents(url: origin, resolvingAgainstBaseURL: true),
              var parts = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        parts.percentEncodedUser = from.percentEncodedUser
        parts.percentEncodedPassword = from.percentEncodedPassword
        return parts.url
    }

    /// Removes what must not reach another origin.
    package static func dropCredentials(from request: inout LoadRequest) {
        request.headerFields[.authorization] = nil
        request.headerFields[.cookie] = nil
        request.headerFields[.proxyAuthorization] = nil
    }

    /// Whether `a` and `b` have the same scheme, host and port (a scheme's default port written out or not).
    package static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        guard let scheme = a.scheme?.lowercased(), scheme == b.scheme?.lowercased(), a.host?.lowercased() == b.host?.lowercased() else {
            return false
        }
        let defaultPort = defaultPorts[scheme]
        return (a.port ?? defaultPort) == (b.port ?? defaultPort)
    }

    /// The ports a URL of these schemes means when it names none.
    package static let defaultPorts = ["http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "ftps": 990]
}

// Most loads are not redirected: following is the further work, so that its larger async frame (the
// delegate's answer, the hop count) is allocated only when there is a redirect.
extension RedirectMiddleware: BuiltInLayer {
    func needsMore(_ result: LoadResult) -> Bool {
        Self.mayRedirect(result)
    }

    func more(_ result: LoadResult, for request: LoadRequest, sent: LoadRequest?, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        guard let proposed = try redirect(for: result, from: request) else { return result }
        return try await follow(result, to: proposed, from: request, context: context, next: next)
    }
}
