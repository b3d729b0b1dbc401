/// Why a client certificate or its private key (the HTTP handler's and the FTP handler's TLS settings) could not be
/// used: the underlying error of a ``LoadError`` with code ``LoadError/Code/secureConnectionFailed``, so that a
/// caller can tell a problem with its own files (curl's exit status 58) from a failed handshake.
public struct ClientIdentityError: Error, Sendable, CustomStringConvertible {
    /// The file that could not be used.
    public let path: String
    /// The TLS library's error, if it gave one.
    public let cause: (any Error)?

    /// Makes the error for `path`.
    public init(path: String, cause: (any Error)?) {
        self.path = path
        self.cause = cause
    }

    /// The file and the cause.
    public var description: String { "cannot use \(path)" + (cause.map { ": \($0)" } ?? "") }
}
