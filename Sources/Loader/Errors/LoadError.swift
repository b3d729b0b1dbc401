import FoundationEssentials

/// The one error type every load fails with.
///
/// A `LoadError` carries a ``Code`` that a URLSession user already knows, the URL that failed, and the
/// underlying cause (an `errno`, a parser error, a TLS alert …) so that a message can say both *what*
/// failed and *why*.
///
/// ```swift
/// do { _ = try await session.data(from: url) }
/// catch let error as LoadError where error.code == .fileDoesNotExist { … }
/// ```
public struct LoadError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. The names follow URLSession's error codes where one exists.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The raw value; stable across releases and equal to URLSession's numeric code where one exists.
        public let rawValue: Int
        /// Makes a code from its raw value.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Something that is not an error of the kinds below.
        public static let unknown = Code(rawValue: -1)
        /// The task was cancelled, by `cancel()`, by Swift task cancellation or by session invalidation.
        public static let cancelled = Code(rawValue: -999)
        /// The URL is malformed: it cannot be parsed or lacks what its scheme needs.
        public static let badURL = Code(rawValue: -1000)
        /// The load took longer than its request or resource timeout.
        public static let timedOut = Code(rawValue: -1001)
        /// No registered handler accepts the URL's scheme.
        public static let unsupportedURL = Code(rawValue: -1002)
        /// The host name could not be resolved.
        public static let cannotFindHost = Code(rawValue: -1003)
        /// The host refused or did not answer the connection attempt. When the system said why,
        /// ``LoadError/underlying`` is that `POSIXError` (`ECONNREFUSED` if any of the host's addresses refused).
        public static let cannotConnectToHost = Code(rawValue: -1004)
        /// The connection broke while the load was in progress.
        public static let networkConnectionLost = Code(rawValue: -1005)
        /// Redirects were followed more times than the configured limit, or they loop.
        public static let httpTooManyRedirects = Code(rawValue: -1007)
        /// The resource is temporarily unavailable.
        public static let resourceUnavailable = Code(rawValue: -1008)
        /// A redirect pointed somewhere that cannot be loaded.
        public static let redirectToNonExistentLocation = Code(rawValue: -1010)
        /// The server (or handler) sent something that breaks its protocol: a malformed head, a short body.
        public static let badServerResponse = Code(rawValue: -1011)
        /// The user or the delegate cancelled an authentication challenge.
        public static let userCancelledAuthentication = Code(rawValue: -1012)
        /// The server requires authentication and none was given.
        public static let userAuthenticationRequired = Code(rawValue: -1013)
        /// The body is compressed or encoded in a way that could not be decoded.
        public static let cannotDecodeContentData = Code(rawValue: -1016)
        /// The response could not be parsed.
        public static let cannotParseResponse = Code(rawValue: -1017)
        /// The resource is a directory where a file was expected.
        public static let fileIsDirectory = Code(rawValue: -1101)
        /// The resource does not exist (a missing file, an FTP 550).
        public static let fileDoesNotExist = Code(rawValue: -1100)
        /// The process lacks permission to read the resource.
        public static let noPermissionsToReadFile = Code(rawValue: -1102)
        /// The body is larger than an allowed maximum (a decompression bomb, a limit the caller set).
        public static let dataLengthExceedsMaximum = Code(rawValue: -1103)
        /// A TLS connection could not be established.
        public static let secureConnectionFailed = Code(rawValue: -1200)
        /// The server's certificate has expired or is not yet valid.
        public static let serverCertificateHasBadDate = Code(rawValue: -1201)
        /// The server's certificate is not signed by a trusted root.
        public static let serverCertificateUntrusted = Code(rawValue: -1202)
        /// The server's certificate does not name the host that was asked for.
        public static let serverCertificateWrongHost = Code(rawValue: -20002)
        /// The server refused the client certificate it was shown (mutual TLS).
        public static let clientCertificateRejected = Code(rawValue: -1205)
        /// The server asks for a client certificate and none was given (mutual TLS).
        public static let clientCertificateRequired = Code(rawValue: -1206)
        /// A file could not be created or written (a full disk, a read-only folder).
        public static let cannotWriteToFile = Code(rawValue: -3003)
        /// A file could not be created.
        public static let cannotCreateFile = Code(rawValue: -3000)
        /// The request body could not be read (a missing upload file, a failing stream).
        public static let requestBodyStreamExhausted = Code(rawValue: -1021)
        /// A handler broke the event contract (a body byte before the response, two responses …).
        /// This is a bug in the handler, reported rather than crashing.
        public static let handlerContractViolation = Code(rawValue: -20001)

        private static let names: [Int: String] = [
            -1: "unknown error", -999: "cancelled", -1000: "bad URL", -1001: "timed out",
            -1002: "unsupported URL", -1003: "cannot find host", -1004: "cannot connect to host",
            -1005: "network connection lost", -1007: "too many redirects", -1008: "resource unavailable",
            -1010: "redirect to non-existent location", -1011: "bad server response",
            -1012: "authentication cancelled", -1013: "authentication required",
            -1016: "cannot decode content data", -1017: "cannot parse response", -1100: "file does not exist",
            -1101: "file is a directory", -1102: "no permission to read file", -1103: "data length exceeds maximum",
            -1200: "secure connection failed", -1201: "server certificate has a bad date",
            -1202: "server certificate untrusted", -1205: "client certificate rejected", -1206: "client certificate required",
            -20002: "server certificate does not match the host", -3000: "cannot create file", -3003: "cannot write to file",
            -1021: "request body stream exhausted", -20001: "handler contract violation",
        ]

        /// A short human-readable name, such as "file does not exist".
        public var description: String { Self.names[rawValue] ?? "error \(rawValue)" }
    }

    /// What kind of failure this is.
    public var code: Code
    /// The URL whose load failed, when one is known.
    public var url: URL?
    /// A sentence about the cause, such as "No such file or directory" or "status line is not HTTP/1.x".
    public var reason: String?
    /// The error underneath, such as a `POSIXError` or a handler's own error.
    public var underlying: (any Error)?
    /// For a download that stopped part way, what ``LoaderSession/download(resumeFrom:delegate:)`` needs to go on
    /// (``ResumeData``); `nil` when it cannot.
    public var resumeData: ResumeData? {
        get { resumeBox?.value }
        set { resumeBox = newValue.map(ResumeBox.init) }
    }

    /// The resume data, held by reference: inline, its 96 bytes made every error 144 bytes, and with them every
    /// `Result` and state that can hold one, moved on every load (the handler driver's effects were 481 bytes,
    /// and their moves showed in profiles), though few errors ever carry it.
    private var resumeBox: ResumeBox?

    private final class ResumeBox: Sendable {
        let value: ResumeData
        init(_ value: ResumeData) { self.value = value }
    }

    /// Makes an error.
    /// - Parameters:
    ///   - code: What kind of failure it is.
    ///   - url: The URL whose load failed.
    ///   - reason: A sentence about the cause.
    ///   - underlying: The error underneath.
    public init(_ code: Code, url: URL? = nil, reason: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.url = url
        self.reason = reason
        self.underlying = underlying
    }

    /// One line naming the code, the URL and the cause, e.g.
    /// `file does not exist: file:///tmp/x (No such file or directory)`. A password in the URL shows as
    /// `***`: messages end up in logs and terminals.
    public var description: String {
        var text = code.description
        if let url { text += ": \(url.absoluteStringHidingPassword.prefix(2048))" }
        var causes: [String] = []
        if let reason { causes.append(reason) }
        // The reason already says what the underlying error would; name the underlying one only when alone.
        if reason == nil, let underlying { causes.append(String(describing: underlying)) }
        if !causes.isEmpty { text += " (\(causes.joined(separator: ": ")))" }
        return text
    }

    /// Converts any error into a `LoadError` for `url`: a `LoadError` keeps its code (gaining the URL if it
    /// had none), `CancellationError` becomes ``Code/cancelled``, anything else becomes ``Code/unknown``
    /// with the error as its cause.
    public static func wrapping(_ error: any Error, url: URL?) -> LoadError {
        switch error {
        case var error as LoadError:
            if error.url == nil { error.url = url }
            return error
        case is CancellationError:
            return LoadError(.cancelled, url: url)
        default:
            return LoadError(.unknown, url: url, underlying: error)
        }
    }
}
