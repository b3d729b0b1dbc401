import FoundationEssentials
import HTTPTypes

/// Follows redirects: those a handler proposes, and HTTP 301, 302, 303, 307 and 308 with `Location`.
///
/// The session puts it below the app's own middleware (see ``LoaderSession/Configuration/redirectLimit``).
/// Method and body follow RFC 9110 §15.4: 303 turns any method but `HEAD` into a body-less `GET`; 301
/// and 302 turn `POST` into `GET` (as every browser and URLSession do); 307 and 308 keep both. When the
/// origin changes, `Authorization`, `Cookie` and `Proxy-Authorization` are removed. The task's delegates
/// may change or refuse each redirect; a refused redirect returns the redirect response itself.
public struct RedirectMiddleware: LoadMiddleware {
    /// The most redirects one load follows before failing with ``LoadError/Code/httpTooManyRedirects``.
    public var limit: Int

    /// Makes the middleware.
    /// - Parameter limit: The most redirects one load follows.
    public init(limit: Int = 16) {
        self.limit = limit
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
        var seen: Set<Visit> = []
        var hops = 0
        while true {
            guard hops < limit else {
                result.body.discard()
                throw LoadError(.httpTooManyRedirects, url: current.url, reason: "more than \(limit) redirects")
            }
            guard let accepted = await context.task.willRedirect(result.response, to: proposed) else {
                return result
            }
            if seen.isEmpty { seen.insert(Visit(current)) }
            let key = Visit(accepted)
            guard !seen.contains(key) else {
                result.body.discard()
                throw LoadError(.httpTooManyRedirects, url: current.url, reason: "the redirects loop back to \(accepted.url.absoluteString)")
            }
            seen.insert(key)
            result.body.discard()
            hops += 1
            current = accepted
            result = try await next(current)
            guard let again = Self.redirect(for: result, from: current) else { return result }
            proposed = again
        }
    }

    /// The statuses followed when the response has a `Location`.
    private static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Whether `result` may be a redirect: proposed by the handler, or a redirect status with `Location`.
    static func mayRedirect(_ result: LoadResult) -> Bool {
        if result.redirectRequest != nil { return true }
        guard let status = result.response.status, redirectStatuses.contains(status.code) else { return false }
        return result.response.headerFields.contains(.location)
    }

    /// The request a result redirects to, or `nil` if it is not a redirect.
    @inline(never)
    static func redirect(for result: LoadResult, from request: LoadRequest) -> LoadRequest? {
        if let proposed = result.redirectRequest { return proposed }
        guard mayRedirect(result), let status = result.response.status,
              let location = result.response.headerFields[.location],
              let target = URL(string: location, relativeTo: request.url)?.absoluteURL
        else { return nil }
        var next = request
        next.url = target
        let keepsMethod = status.code == 307 || status.code == 308
        if !keepsMethod, status.code == 303 ? request.method != .head : request.method == .post {
            next.method = .get
            next.body = nil
            next.headerFields[.contentType] = nil
            next.headerFields[.contentLength] = nil
            next.headerFields[.transferEncoding] = nil
        }
        if !sameOrigin(request.url, target) {
            next.headerFields[.authorization] = nil
            next.headerFields[.cookie] = nil
            next.headerFields[.proxyAuthorization] = nil
        }
        return next
    }

    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased() && a.port == b.port
    }

    /// A method and URL already loaded in this chain, to detect loops.
    private struct Visit: Hashable {
        let method: String
        let url: URL
        init(_ request: LoadRequest) {
            method = request.method.rawValue
            url = request.url
        }
    }
}

// Most loads are not redirected: following is the further work, so that its larger async frame (the
// visited set, the delegate's answer) is allocated only when there is a redirect.
extension RedirectMiddleware: BuiltInLayer {
    func needsMore(_ result: LoadResult) -> Bool {
        Self.mayRedirect(result)
    }

    func more(_ result: LoadResult, for request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        guard let proposed = Self.redirect(for: result, from: request) else { return result }
        return try await follow(result, to: proposed, from: request, context: context, next: next)
    }
}
