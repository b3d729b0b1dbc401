import Crypto
import FoundationEssentials
import HTTPTypes

/// What a private HTTP cache may do, after RFC 9111: which responses it may store, how old a stored one is,
/// whether it may answer a request as it is or must be validated first, and how a `304` refreshes it. Plain
/// functions of the request, the entry and the time; the cache layer (``CacheMiddleware``) does the I/O.
package enum CacheRules {
    /// How a request may be answered, given what is stored.
    enum Decision {
        /// From the stored response, as it is.
        case serve(CachedResponse)
        /// From the server, asked with the stored response's validators (`If-None-Match`, `If-Modified-Since`).
        case validate(LoadRequest, CachedResponse)
        /// From the server, unconditionally.
        case load
        /// Not at all: the request allows only a stored response (`only-if-cached`) and none will do; RFC 9111
        /// §5.2.1.7 answers it with 504.
        case gatewayTimeout
    }

    /// Statuses a cache may store without explicit freshness (RFC 9110 §15.1), minus 206, which this cache
    /// does not keep.
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]
    /// The longest freshness a heuristic gives: a file unchanged for years is not taken as fresh for months.
    static let heuristicLimit: TimeInterval = 7 * 24 * 3600

    /// Fields a `304` does not replace in the stored head: those that describe the stored body, and those never
    /// stored (``notStored``; the 304's `Set-Cookie` goes up with the answer, not into the store).
    static let keptOnUpdate: Set<HTTPField.Name> = notStored.union([.contentLength, .contentEncoding, .contentRange])

    /// Whether `response` to `request` may be stored (RFC 9111 §3), and if so the request's values of the
    /// fields it varies on.
    static func storable(_ response: LoadResponse, for request: LoadRequest, requestControl: CacheControl) -> HTTPFields? {
        guard request.method == .get, let status = response.status?.code, status >= 200, status != 206, status != 304,
              !requestControl.noStore else { return nil }
        let control = CacheControl(response.headerFields)
        // A response to a request with credentials is one user's: kept, it would answer the next request without
        // them (the authentication layer sends credentials only after a 401), or another session's.
        guard !control.noStore, request.headerFields[.authorization] == nil else { return nil }
        let explicit = control.maxAge != nil || response.headerFields[.expires] != nil || control.isPublic
        guard explicit || heuristicallyCacheable.contains(status) else { return nil }
        return varyingFields(of: response, for: request)
    }

    /// The request's values of the fields `Vary` names, or `nil` for `Vary: *` (no later request can match).
    /// `Accept-Encoding` always counts, named or not: a request that sets its own gets the body as sent (the
    /// decoding layer below leaves it alone), one that does not gets it decoded, and neither may have the other's.
    /// A `private` response to a request with cookies varies on them too, named or not: it is one user's, and a store
    /// may be shared by sessions of other users (each with a cookie jar of its own).
    static func varyingFields(of response: LoadResponse, for request: LoadRequest) -> HTTPFields? {
        var fields: HTTPFields = [.acceptEncoding: request.headerFields[.acceptEncoding] ?? ""]
        if let cookie = request.headerFields[.cookie], CacheControl(response.headerFields).isPrivate { fields[.cookie] = cookie }
        for value in response.headerFields[values: .vary] {
            for item in value.split(separator: ",") {
                let name = item.trimmingSpaces()
                if name == "*" { return nil }
                guard let fieldName = HTTPField.Name(String(name)), fields[fieldName] == nil else { continue }
                fields[fieldName] = request.headerFields[fieldName] ?? ""
            }
        }
        return fields
    }

    /// Whether `request` has the values `entry` was stored for (RFC 9111 §4.1).
    package static func matches(_ entry: CachedResponse, _ request: LoadRequest) -> Bool {
        entry.varyingFields.allSatisfy { field in
            let value = normalized(request.headerFields[field.name] ?? "")
            // A store that keeps digests (``varyingDigest(_:)``) is matched by the request's value's digest.
            return value == normalized(field.value) || (field.value.hasPrefix(digestPrefix) && field.value == varyingDigest(value))
        }
    }

    private static let digestPrefix = "sha256:"

    /// What a store that keeps no request's values (a cookie, a token a response varies on) keeps in their place: the
    /// SHA-256 of the value as compared (spaces around list items dropped), marked so that ``matches(_:_:)`` knows it.
    package static func varyingDigest(_ value: String) -> String {
        digestPrefix + DigestChallenge.hex(SHA256.hash(data: Data(normalized(value).utf8)))
    }

    /// Values compared as RFC 9111 §4.1 allows: spaces around list items dropped.
    private static func normalized(_ value: String) -> String {
        value.split(separator: ",").map { $0.trimmingSpaces() }.joined(separator: ",")
    }

    /// How long `response` stays fresh from when it was made (RFC 9111 §4.2.1): `max-age`, else `Expires`
    /// less `Date`, else a tenth of the time since `Last-Modified` for a status that allows it and a URL
    /// without a query (as OkHttp does: a query often means a computed page), else 0.
    static func freshnessLifetime(of entry: CachedResponse) -> TimeInterval {
        let response = entry.response
        let control = CacheControl(response.headerFields)
        if let maxAge = control.maxAge { return TimeInterval(maxAge) }
        let date = response.headerFields[.date].flatMap(HTTPDate.parse) ?? entry.storedAt
        if let expires = response.headerFields[.expires] {
            // An `Expires` that is not a date (often "0") means already expired.
            guard let expiry = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        guard let status = response.status?.code, heuristicallyCacheable.contains(status), response.url.query == nil,
              let modified = response.headerFields[.lastModified].flatMap(HTTPDate.parse) else { return 0 }
        return min(heuristicLimit, max(0, date.timeIntervalSince(modified) / 10))
    }

    /// How old `entry` is at `now` (RFC 9111 §4.2.3): its age when it arrived (the larger of what `Date` and
    /// `Age` say, counting the request's round trip) plus the time it has been stored.
    static func currentAge(of entry: CachedResponse, now: Date) -> TimeInterval {
        let fields = entry.response.headerFields
        let date = fields[.date].flatMap(HTTPDate.parse) ?? entry.storedAt
        // RFC 9111 §5.1: delta-seconds (a list's first member); anything else is no Age at all.
        let ageValue = fields[.age].flatMap { CacheControl.seconds($0.split(separator: ",").first?.trimmingSpaces()) }.map(TimeInterval.init) ?? 0
        let apparentAge = max(0, entry.storedAt.timeIntervalSince(date))
        let correctedAge = ageValue + max(0, entry.storedAt.timeIntervalSince(entry.requestedAt))
        return max(apparentAge, correctedAge) + max(0, now.timeIntervalSince(entry.storedAt))
    }

    /// How to answer `request` under its cache policy, given the entry stored for its URL (if it matches).
    static func decide(_ request: LoadRequest, requestControl: CacheControl, entry: CachedResponse?, now: Date) -> Decision {
        guard let entry else { return requestControl.onlyIfCached ? .gatewayTimeout : .load }
        switch request.cachePolicy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad: return .serve(entry)
        case .reloadIgnoringLocalCacheData: return .load
        case .useProtocolCachePolicy: break
        }
        let control = CacheControl(entry.response.headerFields)
        let lifetime = freshnessLifetime(of: entry)
        let age = currentAge(of: entry, now: now)
        if !control.noCache, !requestControl.noCache {
            let fresh = age < lifetime
                && requestControl.maxAge.map { age <= TimeInterval($0) } ?? true
                && requestControl.minFresh.map { lifetime - age >= TimeInterval($0) } ?? true
            // RFC 9111 §4.2.4: a stale response only if the request accepts it and the response allows it.
            let acceptedStale = !fresh && !control.mustRevalidate
                && requestControl.maxStale.map { age - lifetime <= TimeInterval($0) } ?? false
            if fresh || acceptedStale { return .serve(entry) }
        }
        if requestControl.onlyIfCached { return .gatewayTimeout }
        guard let conditional = conditionalRequest(request, for: entry) else { return .load }
        return .validate(conditional, entry)
    }

    /// `request` asking whether `entry` is still current (RFC 9110 §13.1), or `nil` when it has no validator.
    static func conditionalRequest(_ request: LoadRequest, for entry: CachedResponse) -> LoadRequest? {
        let etag = entry.response.headerFields[.eTag]
        let modified = entry.response.headerFields[.lastModified]
        guard etag != nil || modified != nil else { return nil }
        var request = request
        if let etag { request.headerFields[.ifNoneMatch] = etag }
        if let modified { request.headerFields[.ifModifiedSince] = modified }
        return request
    }

    /// `entry` refreshed by a `304` (RFC 9111 §4.3.4): the 304's fields replace the stored ones of the same
    /// name, and its times become the entry's. `nil` when the 304 names another representation (its validators
    /// are not the stored ones: ``validatorsMatch(_:_:)``), which then cannot be answered from this entry.
    static func refreshed(_ entry: CachedResponse, by notModified: LoadResponse, requestedAt: Date, receivedAt: Date) -> CachedResponse? {
        guard validatorsMatch(notModified.headerFields, entry.response.headerFields) else { return nil }
        var entry = entry
        var replaced = Set(notModified.headerFields.map(\.name)).subtracting(keptOnUpdate)
        // The stored Date and Age describe the first answer: a 304 without its own would leave the entry as old
        // as that answer (RFC 9110 §6.6.1: a recipient supplies Date as the time it received a response).
        replaced.formUnion([.date, .age])
        var fields = HTTPFields()
        for field in entry.response.headerFields where !replaced.contains(field.name) { fields.append(field) }
        for field in notModified.headerFields where replaced.contains(field.name) { fields.append(field) }
        if notModified.headerFields[.date] == nil, let date = IMFFixdate.string(fromUnixTime: Int(receivedAt.timeIntervalSince1970)) {
            fields.append(HTTPField(name: .date, value: date))
        }
        entry.response.headerFields = fields
        entry.requestedAt = requestedAt
        entry.storedAt = receivedAt
        return entry
    }

    /// Whether a 304's validators select the stored response (RFC 9111 §4.3.4): a strong `ETag` only a stored
    /// strong one that is the same, a weak one the same opaque tag (RFC 9110 §8.8.3.2), else a `Last-Modified` the
    /// same date; a 304 without validators selects the one entry there is.
    static func validatorsMatch(_ notModified: HTTPFields, _ stored: HTTPFields) -> Bool {
        if let tag = notModified[.eTag] {
            guard let storedTag = stored[.eTag] else { return false }
            let weak = tag.hasPrefix("W/")
            if !weak, storedTag.hasPrefix("W/") { return false }
            return tag.dropFirst(weak ? 2 : 0) == storedTag.dropFirst(storedTag.hasPrefix("W/") ? 2 : 0)
        }
        if let modified = notModified[.lastModified] {
            guard let date = HTTPDate.parse(modified), let storedModified = stored[.lastModified] else { return false }
            return HTTPDate.parse(storedModified) == date
        }
        return true
    }

    /// Fields that describe one connection's transfer, not the response (RFC 9110 §7.6.1), and `Set-Cookie`, which
    /// the cookie layer has from the response itself: none of them is stored.
    static let notStored: Set<HTTPField.Name> = [
        .connection, .transferEncoding, .te, .trailer, .upgrade, .setCookie, .proxyAuthenticate,
        HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!,
    ]

    /// `response` as it is stored: without ``notStored`` fields and those its `Connection` field names.
    static func storedHead(of response: LoadResponse) -> LoadResponse {
        var dropped = notStored
        for value in response.headerFields[values: .connection] {
            for name in value.split(separator: ",") {
                if let name = HTTPField.Name(String(name.trimmingSpaces())) { dropped.insert(name) }
            }
        }
        var response = response
        response.headerFields = HTTPFields(response.headerFields.filter { !dropped.contains($0.name) })
        return response
    }

    /// The head a stored response is given to the caller with: its current `Age` (RFC 9111 §5.1) and the body's
    /// length.
    static func servedHead(of entry: CachedResponse, for url: URL, now: Date) -> LoadResponse {
        var response = entry.response
        // The request's URL: the entry's may be written otherwise (``CachedResponse/key(for:)``), or without its password.
        response.url = url
        let age = min(currentAge(of: entry, now: now).rounded(.down), TimeInterval(CacheControl.maximumSeconds))
        response.headerFields[.age] = String(Int(age))
        if response.headerFields[.contentLength] == nil { response.headerFields[.contentLength] = String(entry.data.count) }
        return response
    }

    /// Whether a response to `method` makes stored responses for its URL out of date (RFC 9111 §4.4): a
    /// successful or redirected answer to a method that may change the resource.
    static func invalidates(_ method: HTTPRequest.Method, status: Int?) -> Bool {
        guard let status, (200..<400).contains(status) else { return false }
        return ![.get, .head, .options, .trace].contains(method)
    }
}
