import Foundation
import Loader

/// The resources a handler is tested with: URLs whose outcome the handler author knows.
///
/// Leave out what your scheme cannot provide; the properties that need it are reported as skipped.
public struct ConformanceFixtures: Sendable {
    /// A URL that loads successfully, with the exact body it must give.
    public struct Resource: Sendable {
        /// The URL.
        public var url: URL
        /// Its body, byte for byte.
        public var body: Data
        /// Makes a resource.
        public init(url: URL, body: Data) {
            self.url = url
            self.body = body
        }
    }

    /// Resources that load successfully: at least one; two or more with different bodies let the
    /// concurrency check tell loads apart.
    public var success: [Resource]
    /// A URL of a resource that does not exist.
    public var missing: URL?
    /// The error code a load of ``missing`` must fail with.
    public var missingErrorCode: LoadError.Code
    /// A URL with a large body (128 MiB or more, so that buffering it whole would show), streamed by the
    /// handler without holding it all.
    public var large: URL?
    /// The SHA-256 of ``large``'s body as 64 hex digits (what `sha256sum` prints): given, the body read is compared
    /// with it (`bodyMatchesFixture`), too large to be given whole; `nil`, only its length is checked.
    public var largeSHA256: String?
    /// A URL whose load takes half a second or more, sending data over that time.
    public var slow: URL?
    /// A URL the handler answers with a redirect.
    public var redirect: URL?
    /// Seconds a load of a fixture may take (the large one: fifteen times this, with progress at least this
    /// often) before it counts as never ending.
    public var timeout: TimeInterval
    /// Response fields that may differ between two loads of the same URL (lowercased names), ignored when
    /// loads are compared: `date`, `age`, `expires` and `set-cookie` by default.
    public var volatileFields: Set<String> = ["date", "age", "expires", "set-cookie"]
    /// Settings every load of the suite carries: those of its sessions (``Loader/LoaderSession/Configuration/handlerOptions``)
    /// and of the requests it gives the handler itself. For what the fixtures' server needs of your handler: its test
    /// CA, HTTP/2 with prior knowledge. Empty by default.
    public var handlerOptions = HandlerOptions()

    /// Makes fixtures.
    public init(
        success: [Resource],
        missing: URL? = nil,
        missingErrorCode: LoadError.Code = .fileDoesNotExist,
        large: URL? = nil,
        slow: URL? = nil,
        redirect: URL? = nil,
        timeout: TimeInterval = 20,
        largeSHA256: String? = nil
    ) {
        self.success = success
        self.missing = missing
        self.missingErrorCode = missingErrorCode
        self.large = large
        self.slow = slow
        self.redirect = redirect
        self.timeout = timeout
        self.largeSHA256 = largeSHA256?.lowercased()
    }
}
