import FoundationEssentials
import HTTPTypes

/// Answers `http` and `https` `GET` requests from a ``ResponseCache`` when RFC 9111 allows, validates stored
/// responses with the server when it asks to, and stores what may be stored.
///
/// Between cookies and content decoding (``LoaderSession/Configuration/responseCache``): each hop of a redirect
/// and each authenticated retry is a request of its own here, a `Cookie` field does not split entries, and
/// bodies are stored decoded. The request's ``LoadRequest/cachePolicy`` chooses how: by HTTP's rules, from
/// whatever is stored (`returnCacheDataElseLoad`, `returnCacheDataDontLoad`), or from the server whatever is
/// stored (`reloadIgnoringLocalCacheData`, whose answer is still stored). A request with its own conditions
/// (`If-None-Match`, `Range` …) passes by the cache both ways: its answer is for the app, and is not a whole body.
/// So does one with credentials (`Authorization`): its answer is one user's.
struct CacheMiddleware: LoadMiddleware {
    let cache: any ResponseCache
    /// The clock entries are aged by.
    var now: @Sendable () -> Date = { Date() }

    /// Fields with which the app asks for something other than the current whole body.
    static let ownConditions: [HTTPField.Name] = [.ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince, .ifRange, .range]

    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        guard request.scheme == "http" || request.scheme == "https" else { return try await next(request) }
        let key = CachedResponse.key(for: request.url)
        guard request.method == .get else {
            let result = try await next(request)
            if CacheRules.invalidates(request.method, status: result.response.status?.code) {
                await invalidate(key: key, after: result.response, to: request.url)
            }
            return result
        }
        let control = CacheControl(request.headerFields)
        if control.noStore || request.headerFields[.authorization] != nil
            || Self.ownConditions.contains(where: { request.headerFields[$0] != nil }) {
            // Such a request is never answered from the store, and `only-if-cached` allows no other answer.
            if control.onlyIfCached { return LoadResult(response: LoadResponse(url: request.url, status: .gatewayTimeout), body: .empty) }
            return try await next(request)
        }
        var entry: CachedResponse?
        if request.cachePolicy != .reloadIgnoringLocalCacheData, let stored = await cache.cachedResponse(for: key),
           CacheRules.matches(stored, request) {
            entry = stored
        }
        switch CacheRules.decide(request, requestControl: control, entry: entry, now: now()) {
        case .serve(let entry):
            return LoadResult(response: CacheRules.servedHead(of: entry, for: request.url, now: now()), body: ResponseBody(data: entry.data))
        case .gatewayTimeout:
            return LoadResult(response: LoadResponse(url: request.url, status: .gatewayTimeout), body: .empty)
        case .load:
            return try await loaded(request, control: control, ticket: PendingStores.shared.ticket(for: key), next: next)
        case .validate(let conditional, let entry):
            // Taken before the request goes: a change to the URL from now on voids what this request would store.
            let ticket = PendingStores.shared.ticket(for: key)
            let requestedAt = now()
            let result = try await next(conditional)
            guard result.response.status == .notModified else {
                return await stored(result, for: request, control: control, ticket: ticket, requestedAt: requestedAt)
            }
            await drain(result.body)
            guard let refreshed = CacheRules.refreshed(entry, by: result.response, requestedAt: requestedAt, receivedAt: now()) else {
                // The server's 304 is for a representation other than the one stored: ask for the whole body, a request
                // of its own, newer than any that went out meanwhile.
                return try await loaded(request, control: control, ticket: PendingStores.shared.ticket(for: key), next: next)
            }
            await ticket.store(refreshed, in: cache)
            var head = CacheRules.servedHead(of: refreshed, for: request.url, now: now())
            // Cookies the 304 sets (a session kept alive) go up to the cookie layer; they are not stored.
            for field in result.response.headerFields where field.name == .setCookie { head.headerFields.append(field) }
            return LoadResult(response: head, body: ResponseBody(data: refreshed.data))
        }
    }

    private func loaded(_ request: LoadRequest, control: CacheControl, ticket: PendingStores.Ticket, next: LoadNext) async throws -> LoadResult {
        let requestedAt = now()
        return await stored(try await next(request), for: request, control: control, ticket: ticket, requestedAt: requestedAt)
    }

    /// The largest redirect body read at once to store the redirect: the redirect layer gives a body up unread.
    static let redirectBodyLimit = 16 * 1024

    /// `result` with a body that is stored once it has arrived whole, if RFC 9111 lets it be stored and the store
    /// takes a body of its length. A successful answer that is not stored after all (it may not be, its body failed
    /// or was longer than the store takes) removes what was: it is newer.
    private func stored(_ result: LoadResult, for request: LoadRequest, control: CacheControl, ticket: PendingStores.Ticket,
                        requestedAt: Date) async -> LoadResult {
        let limit = cache.maximumEntrySize
        let length = result.response.expectedContentLength
        guard let varying = CacheRules.storable(result.response, for: request, requestControl: control),
              length.map({ $0 <= Int64(limit) }) ?? true else {
            if result.response.isSuccess { await ticket.remove(from: cache) }
            return result
        }
        var entry = CachedResponse(response: CacheRules.storedHead(of: result.response), data: Data(), requestedAt: requestedAt,
                                   storedAt: now(), varyingFields: varying)
        if result.response.status?.kind == .redirection, result.response.headerFields[.location] != nil,
           let length, length <= Int64(Self.redirectBodyLimit) {
            // A redirect is stored now, its small body read: the redirect layer would give it up unread.
            var result = result
            do {
                entry.data = try await result.body.collect(upTo: Self.redirectBodyLimit)
                await ticket.store(entry, in: cache)
                result.body = ResponseBody(data: entry.data)
            } catch {
                // A caller that does not follow redirects reads the body: it fails there, as it would have.
                result.body = ResponseBody(FailedBody(error: error))
            }
            return result
        }
        let cache = self.cache
        let head = entry
        let replacesStored = result.response.isSuccess
        let body = CachingBody(inner: result.body, limit: limit, expectedLength: length, complete: { data in
            var entry = head
            entry.data = data
            await ticket.store(entry, in: cache)
        }, dropped: {
            if replacesStored { await ticket.remove(from: cache) }
        })
        var result = result
        result.body = ResponseBody(body, wrapping: result.body)
        return result
    }

    /// Reads a 304's body (empty, or a few bytes from a careless server) so that its connection goes back to the
    /// pool, giving it up if there is more.
    private func drain(_ body: ResponseBody) async {
        do { _ = try await body.collect(upTo: 64 * 1024) } catch { body.discard() }
    }

    /// Removes what is stored for a URL a successful unsafe request changed, and for the same-origin URLs its
    /// response's `Location` and `Content-Location` name (RFC 9111 §4.4).
    /// Responses still arriving for them are not stored (``PendingStores``).
    private func invalidate(key: String, after response: LoadResponse, to url: URL) async {
        var keys = [key]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = response.headerFields[name], let target = URL(leniently: value, relativeTo: url)?.absoluteURL,
                  RedirectMiddleware.sameOrigin(url, target) else { continue }
            keys.append(CachedResponse.key(for: target))
        }
        for key in keys {
            PendingStores.shared.void(key)
            await cache.removeCachedResponse(for: key)
        }
    }
}
