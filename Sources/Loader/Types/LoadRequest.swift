import FoundationEssentials
import HTTPTypes

/// A request to load one URL: what a handler receives and what middleware may rewrite.
///
/// A value type: rewriting it in a middleware never changes what another layer sees.
/// HTTP vocabulary comes from swift-http-types; other schemes ignore what they have no use for
/// (a `file:` handler honours `GET`, `HEAD` and `PUT`, and a `Range` header).
public struct LoadRequest: Sendable {
    /// The URL to load.
    public var url: URL {
        get { storage.url }
        set {
            let storage = unique()
            storage.url = newValue
            storage.scheme = Self.scheme(of: newValue)
        }
    }
    /// The method; `GET` unless set.
    public var method: HTTPRequest.Method {
        get { storage.method }
        _modify { yield &unique().method }
    }
    /// Header fields sent with the request (or interpreted by the handler, for non-HTTP schemes).
    public var headerFields: HTTPFields {
        get { storage.headerFields }
        _modify { yield &unique().headerFields }
    }
    /// What to send, or `nil` for no body.
    public var body: RequestBody? {
        get { storage.body }
        _modify { yield &unique().body }
    }
    /// How a cache layer may answer this request.
    public var cachePolicy: CachePolicy {
        get { storage.cachePolicy }
        _modify { yield &unique().cachePolicy }
    }
    /// Seconds a load may go without progress before it fails with ``LoadError/Code/timedOut``;
    /// `nil` takes the session's `timeoutIntervalForRequest`.
    public var timeoutInterval: TimeInterval? {
        get { storage.timeoutInterval }
        _modify { yield &unique().timeoutInterval }
    }
    /// Values a handler or middleware attaches to the request for a later layer to read,
    /// like URLProtocol's `property(forKey:in:)`.
    public var attributes: [String: String] {
        get { storage.attributes }
        _modify { yield &unique().attributes }
    }
    /// Typed options for the handler (see ``HandlerOptions``); the session fills in its configuration's
    /// `handlerOptions` where the request sets none.
    public var options: HandlerOptions {
        get { storage.options }
        _modify { yield &unique().options }
    }
    /// The session running the load, set by the session. Handlers that keep resources between loads (a
    /// connection pool) key them on it, so that sessions share nothing, as URLSession's do not.
    public internal(set) var sessionIdentifier: Int? {
        get { storage.sessionIdentifier }
        _modify { yield &unique().sessionIdentifier }
    }

    /// The fields, shared between copies until one is changed: a request passes through many layers
    /// and tasks, and copying one is then a single reference count, not one per field.
    private var storage: Storage

    private final class Storage: @unchecked Sendable {
        // @unchecked: changed only while uniquely referenced (``LoadRequest/unique()``), so never shared
        // while it changes.
        var url: URL
        var scheme: String
        var method: HTTPRequest.Method
        var headerFields: HTTPFields
        var body: RequestBody?
        var cachePolicy: CachePolicy
        var timeoutInterval: TimeInterval?
        var attributes: [String: String] = [:]
        var options = HandlerOptions()
        var sessionIdentifier: Int?

        init(url: URL, method: HTTPRequest.Method, headerFields: HTTPFields, body: RequestBody?,
             cachePolicy: CachePolicy, timeoutInterval: TimeInterval?) {
            self.url = url
            self.scheme = LoadRequest.scheme(of: url)
            self.method = method
            self.headerFields = headerFields
            self.body = body
            self.cachePolicy = cachePolicy
            self.timeoutInterval = timeoutInterval
        }

        /// A copy of `other`, its scheme included (not worked out again from the URL).
        init(copying other: Storage) {
            url = other.url
            scheme = other.scheme
            method = other.method
            headerFields = other.headerFields
            body = other.body
            cachePolicy = other.cachePolicy
            timeoutInterval = other.timeoutInterval
            attributes = other.attributes
            options = other.options
            sessionIdentifier = other.sessionIdentifier
        }
    }

    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
        return storage
    }

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
        storage = Storage(url: url, method: method, headerFields: headerFields, body: body,
                          cachePolicy: cachePolicy, timeoutInterval: timeoutInterval)
    }

    /// The URL's scheme, lowercased, or `""` when it has none (worked out once per URL).
    public var scheme: String { storage.scheme }

    private static func scheme(of url: URL) -> String {
        url.scheme?.lowercased() ?? ""
    }
}

/// How a cache layer may answer a request. The names follow URLSession's cache policies.
public enum CachePolicy: Sendable, Hashable {
    /// Follow the protocol's rules (HTTP freshness and validation).
    case useProtocolCachePolicy
    /// Ignore cached data and load from the origin.
    case reloadIgnoringLocalCacheData
    /// Use cached data of any age, or load if there is none.
    case returnCacheDataElseLoad
    /// Use cached data of any age, and fail if there is none: a request that no layer answers from a cache
    /// fails with ``LoadError/Code/resourceUnavailable`` before its handler starts, unless the handler has
    /// no origin to spare (``SchemeHandler/reachesOrigin``: `data:` and `file:` load). The answer comes from the
    /// session's ``LoaderSession/Configuration/responseCache`` or an app's middleware.
    case returnCacheDataDontLoad
}
