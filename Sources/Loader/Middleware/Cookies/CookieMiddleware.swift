import FoundationEssentials
import HTTPTypes

/// Sends a store's cookies with each request and gives the store every response's `Set-Cookie` fields.
///
/// Below redirects and authentication (``LoaderSession/Configuration/cookieStore``), so that each hop of a
/// redirect and each authenticated retry is a request of its own here: a cookie set by a `302` goes with the
/// request that follows it. A request that sets its own `Cookie` field is sent as it is; what its response
/// sets is still saved. Otherwise the `Cookie` field is the store's: a redirect a handler proposes (often a copy
/// of the request it was given, this layer's field included) goes on without it, and the store fills it for
/// the new URL, with what the redirect response just set.
struct CookieMiddleware: LoadMiddleware {
    let store: any CookieStore

    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await loadSplit(request, context: context, next: next)
    }
}

// Everyday work only: a field added on the way down, the response's fields read on the way up.
extension CookieMiddleware: BuiltInLayer {
    func passingDown(_ request: LoadRequest) -> (request: LoadRequest, transforms: Bool) {
        guard request.headerFields[.cookie] == nil, let field = store.cookieField(for: request.url) else {
            return (request, true)
        }
        var request = request
        request.headerFields.append(HTTPField(name: .cookie, value: field))
        return (request, true)
    }

    func transformed(_ result: LoadResult, sent: LoadRequest?) -> LoadResult {
        let values = result.response.headerFields[values: .setCookie]
        if !values.isEmpty { store.save(setCookie: values, from: result.response.url) }
        return result
    }

    func needsMore(_ result: LoadResult) -> Bool {
        result.redirectRequest?.headerFields[.cookie] != nil
    }

    /// A proposed redirect without the field this layer gave the handler, unless the app set its own.
    func more(_ result: LoadResult, for request: LoadRequest, sent: LoadRequest?, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        guard request.headerFields[.cookie] == nil else { return result }
        var result = result
        result.redirectRequest?.headerFields[.cookie] = nil
        return result
    }
}
