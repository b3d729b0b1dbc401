import FoundationEssentials
import HTTPTypes

/// A response stored by a cache (``ResponseCache``): its head, its whole body, and what RFC 9111 needs to tell its
/// age and whether it suits a later request. Also handed to a handler (``SchemeHandler/cachedResponse``).
public struct CachedResponse: Sendable {
    /// The stored response head, as the layers below the cache gave it (decoded, without `Set-Cookie`).
    public var response: LoadResponse
    /// The stored body.
    public var data: Data
    /// When the request that brought the response was sent (RFC 9111's `request_time`).
    public var requestedAt: Date
    /// When the response arrived (RFC 9111's `response_time`).
    public var storedAt: Date
    /// The request's values of the fields the response's `Vary` names (each name present, empty when the
    /// request had none): a later request is answered only if its own values are the same.
    public var varyingFields: HTTPFields

    /// Makes a cached response.
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The whole body.
    ///   - requestedAt: When its request was sent (defaults to `storedAt`).
    ///   - storedAt: When it arrived.
    ///   - varyingFields: The request's values of the fields `Vary` names.
    public init(response: LoadResponse, data: Data, requestedAt: Date? = nil, storedAt: Date = Date(),
                varyingFields: HTTPFields = [:]) {
        self.response = response
        self.data = data
        self.requestedAt = requestedAt ?? storedAt
        self.storedAt = storedAt
        self.varyingFields = varyingFields
    }

    /// Bytes the entry takes, roughly: its body and its fields. What a store's capacity counts.
    public var cost: Int {
        data.count + response.headerFields.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
            + response.url.absoluteString.utf8.count
    }
}
