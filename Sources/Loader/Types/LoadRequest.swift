import Foundation
import HTTPTypes

/// A request to load one URL: what a handler receives and what middleware may rewrite.
///
/// A value type: rewriting it in a middleware never changes what another layer sees.
/// HTTP vocabulary comes from swift-http-types; other schemes ignore what they have no use for
/// (a `file:` handler honours `GET`, `HEAD` and `PUT`, and a `Range` header).
public struct LoadRequest: Sendable {
    /// The URL to load.
    public var url: URL
    /// The method; `GET` unless set.
    public var method: HTTPRequest.Method
    /// Header fields sent with the request (or interpreted by the handler, for non-HTTP schemes).
    public var headerFields: HTTPFields
    /// What to send, or `nil` for no body.
    public var body: RequestBody?
    /// How a cache layer may answer this request.
    public var cachePolicy: CachePolicy
    /// Seconds a load may go without progress before it fails with ``LoadError/Code/timedOut``;
    /// `nil` takes the session's `timeoutIntervalForRequest`.
    public var timeoutInterval: TimeInterval?
    /// Values a handler or middleware attaches to the request for a later layer to read,
    /// like URLProtocol's `property(forKey:in:)`.
    public var attributes: [String: String]
    /// Typed options for the handler (see ``HandlerOptions``); the session fills in its configuration's
    /// `handlerOptions` where the request sets none.
    public var options: HandlerOptions
    /// The session running the load, set by the session. Handlers that keep resources between loads (a
    /// connection pool) key them on it, so that sessions share nothing, as URLSession's do not.
    public internal(set) var sessionIdentifier: Int?

    /// Makes a request.
    /// - Parameters:
    ///   - url: The URL to load.
    ///   - method: The method; `GET` by default.
    ///   - headerFields: Header fields to send.
    ///   - body: What to send.
    ///   - cachePolicy: How a cache layer may answer.
    ///   - timeoutInterval: The idle timeout, or `nil` for the session's.
    public init(
        url: URL,
        method: HTTPRequest.Method = .get,
        headerFields: HTTPFields = [:],
        body: RequestBody? = nil,
        cachePolicy: CachePolicy = .useProtocolCachePolicy,
        timeoutInterval: TimeInterval? = nil
    ) {
        self.url = url
        self.method = method
        self.headerFields = headerFields
        self.body = body
        self.cachePolicy = cachePolicy
        self.timeoutInterval = timeoutInterval
        self.attributes = [:]
        self.options = HandlerOptions()
        self.sessionIdentifier = nil
    }

    /// The URL's scheme, lowercased, or `""` when it has none.
    public var scheme: String { url.scheme?.lowercased() ?? "" }
}

/// How a cache layer may answer a request. The names follow URLSession's cache policies.
public enum CachePolicy: Sendable, Hashable {
    /// Follow the protocol's rules (HTTP freshness and validation).
    case useProtocolCachePolicy
    /// Ignore cached data and load from the origin.
    case reloadIgnoringLocalCacheData
    /// Use cached data of any age, or load if there is none.
    case returnCacheDataElseLoad
    /// Use cached data of any age, and fail if there is none.
    case returnCacheDataDontLoad
}

/// A response stored by a cache, handed to a handler so that it can validate it.
public struct CachedResponse: Sendable {
    /// The stored response head.
    public var response: LoadResponse
    /// The stored body.
    public var data: Data
    /// When it was stored.
    public var storedAt: Date

    /// Makes a cached response.
    public init(response: LoadResponse, data: Data, storedAt: Date = Date()) {
        self.response = response
        self.data = data
        self.storedAt = storedAt
    }
}
