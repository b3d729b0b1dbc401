import FoundationEssentials
import HTTPTypes

extension LoaderSession {
    /// A session's settings, fixed when the session is made.
    public struct Configuration: Sendable {
        /// Settings for a session that may keep persistent state (cookies, cache) in later layers.
        public static var `default`: Configuration { Configuration(isEphemeral: false) }
        /// Settings for a session that keeps nothing on disk.
        public static var ephemeral: Configuration { Configuration(isEphemeral: true) }

        /// Whether the session keeps nothing on disk. Set by ``init(isEphemeral:)``; changing it afterwards
        /// leaves ``credentialStore`` as it is.
        public var isEphemeral: Bool
        /// Handler classes this session consults before the process-wide registry; later entries win.
        public var handlerClasses: [SchemeHandler.Type] = []
        /// The session's middleware, outermost first. The built-in policies join this list as they land.
        public var middleware: [any LoadMiddleware] = []
        /// The most redirects one load follows (handler-proposed and HTTP 3xx); 0 turns following off,
        /// so redirect responses reach the caller.
        public var redirectLimit: Int = 16
        /// The schemes a server's redirect may lead to (``RedirectMiddleware/allowedSchemes``): `http`, `https`
        /// and `ftp`, as curl's default. Adding `file` lets any server that is asked for a URL read local files.
        public var redirectSchemes: Set<String> = RedirectMiddleware.defaultAllowedSchemes
        /// Where default handling of authentication challenges finds credentials: ``CredentialStore/shared``
        /// by default, a new store in memory for each ephemeral configuration (the sessions made from one such
        /// value share it, as they would share a store set here), `nil` for none.
        public var credentialStore: CredentialStore?
        /// Where the session keeps cookies, or `nil` (the default) to send and keep none. The `Cookies` library's
        /// `CookieJar` is one; sessions given the same store share its cookies. A request that sets its own
        /// `Cookie` field is sent with it alone.
        public var cookieStore: (any CookieStore)?
        /// The hosts the session reaches over HTTPS alone, as their servers asked (HTTP Strict Transport Security,
        /// RFC 6797): an `http` request to one goes as `https`, a WebSocket's `ws:` as `wss:`. A new store in memory by default, which the sessions made
        /// from this value share; `nil` turns it off (as curl without `--hsts`).
        public var hstsStore: HSTSStore? = HSTSStore()
        /// Where the session keeps HTTP responses for later requests, or `nil` (the default) to keep none.
        /// ``MemoryResponseCache`` keeps them in memory; the `DiskStores` library's `DiskResponseCache` on
        /// disk. What is stored, and when a stored response answers a request, follow RFC 9111 and each request's
        /// ``LoadRequest/cachePolicy`` (see ``ResponseCache``).
        public var responseCache: (any ResponseCache)?
        /// Whether and how compressed response bodies are asked for and decoded (on by default).
        public var contentDecoding = ContentDecoding.automatic
        /// Header fields added to every request that does not set them itself. An `Accept-Encoding` here
        /// counts as each request's own: bodies then arrive as the server sent them (see ``ContentDecoding``).
        public var additionalHeaderFields: HTTPFields = [:]
        /// The cache policy of requests made from a URL alone.
        public var requestCachePolicy: CachePolicy = .useProtocolCachePolicy
        /// Seconds a load may go without progress, a response or request body byte (a request's own
        /// `timeoutInterval` overrides it).
        public var timeoutIntervalForRequest: TimeInterval = 60
        /// Seconds a whole load may take, from its first handler's start, redirects and retries included.
        public var timeoutIntervalForResource: TimeInterval = 7 * 24 * 3600
        /// Bytes of body buffered between a handler and a slow reader before the handler is held back.
        public var bodyBufferLimit: Int = 2 * 1024 * 1024
        /// Typed options for handlers, given to every request of the session (a request's own win).
        public var handlerOptions = HandlerOptions()
        /// Where downloads write their temporary files.
        public var temporaryDirectory: URL = FileManager.default.temporaryDirectory

        /// Makes a configuration.
        /// - Parameter isEphemeral: Whether the session keeps nothing on disk.
        public init(isEphemeral: Bool = false) {
            self.isEphemeral = isEphemeral
            self.credentialStore = isEphemeral ? CredentialStore() : .shared
        }
    }
}
