import ArgumentParser
import FTPScheme
import HTTPScheme
import Loader

/// The tool's exit statuses. They follow curl's numbers where curl has one for the same failure, so
/// scripts written for curl read them the same way.
///
/// | status | meaning |
/// |---|---|
/// | 0 | every URL loaded |
/// | 1 | no handler for the URL's scheme (curl: unsupported protocol) |
/// | 2 | usage error: unknown option, missing URL (curl: failed to initialize) |
/// | 3 | malformed URL |
/// | 5 | the proxy's name could not be resolved |
/// | 6 | host not found |
/// | 7 | cannot connect |
/// | 9 | the FTP server would not enter a folder of the path (curl: remote access denied) |
/// | 16 | the server did not speak HTTP/2 as it must (curl: HTTP/2 framing layer) |
/// | 18 | the connection ended before the body was whole (curl: partial file) |
/// | 21 | the FTP server refused a command `-Q` gave (curl: quote error) |
/// | 22 | `-f` and the server answered with an HTTP error status (400 or above) |
/// | 23 | the output file could not be written |
/// | 25 | the server refused the upload (FTP: `STOR` denied) |
/// | 26 | the upload body, or a `-K` file, could not be read |
/// | 28 | timed out |
/// | 30 | `-P`: active FTP could not set up its data connection (no port free, an address not this host's, `PORT` refused) |
/// | 33 | `-C`: the answer is not the rest of the download (a server that ignores ranges) |
/// | 35 | TLS failure |
/// | 36 | `-C` or `-r`: the offset is past the end of the resource (`file:`, `ftp:`) |
/// | 37 | a local file could not be read: missing, a directory, or no permission |
/// | 47 | too many redirects |
/// | 52 | the server closed the connection without a byte of response (curl: empty reply) |
/// | 55 | the request could not be sent |
/// | 56 | the connection broke or the response was malformed, the server refused the client certificate, or a proxy refused the tunnel |
/// | 58 | the client certificate (`-E`) or its key could not be read or do not go together |
/// | 60 | the server's certificate is not trusted, expired, or names another host |
/// | 61 | the body could not be decoded |
/// | 63 | the body exceeded the maximum size |
/// | 67 | login denied |
/// | 78 | the remote resource does not exist (an FTP file included) |
/// | 90 | the server's public key is none of `--pinnedpubkey`'s |
/// | 92 | the server reset the HTTP/2 stream before the response was complete (curl: HTTP/2 stream error) |
/// | 97 | a SOCKS proxy refused the tunnel or its login, or broke its handshake (curl: proxy handshake error) |
/// | 130 | cancelled (interrupted) |
/// | 99 | anything else |
public enum LoadURLExit {
    /// The exit status for `error`: as ``status(for:)-(LoadError.Code)``, except that a missing file on a
    /// remote (FTP) server is curl's 78, not the 37 of a local one, and a file a remote server would not write
    /// (a refused upload) is curl's 25, not the 23 of a local output that could not be written, and a client
    /// certificate that could not be used (``Loader/ClientIdentityError``) is curl's 58, and a server that breaks
    /// HTTP/2 (``HTTPScheme/HTTP2ProtocolError``) curl's 16, and a stream the server reset
    /// (``HTTPScheme/HTTP2StreamReset``) curl's 92, a range past a file's end (``Loader/RangeNotSatisfiable``) curl's 36, an active-mode FTP data connection that could not be set up (``FTPScheme/FTPActiveModeFailure``) curl's 30, an FTP command refused (``FTPScheme/FTPCommandRefused``) curl's 21, a folder of an FTP path the server would not enter (``FTPScheme/FTPFolderRefused``) curl's 9, and a proxy's refusal of the tunnel (``HTTPScheme/ProxyTunnelRefused``, a `407` too) curl's 56, a server key none of the pins name (``Loader/PublicKeyPinMismatch``) curl's 90, a proxy whose name is not found or whose SOCKS handshake fails (``Loader/ProxyFailure``) curl's 5 and 97, and a response cut short (``Loader/ResponseCutShort``) curl's 52 when
    /// nothing of it came and 18 when its body was cut. Local means a
    /// handler with no origin to reach (`file:`, `archive:`; ``SchemeHandler/reachesOrigin``).
    public static func status(for error: LoadError) -> Int32 {
        let remote = error.url.map { url in
            !url.isFileURL && SchemeRegistry.default.handlerClass(for: LoadRequest(url: url))?.reachesOrigin != false
        } ?? false
        if error.underlying is FTPFolderRefused { return 9 }
        if remote, [.fileDoesNotExist, .fileIsDirectory].contains(error.code) { return 78 }
        if remote, [.cannotWriteToFile, .cannotCreateFile].contains(error.code) { return 25 }
        if error.underlying is ClientIdentityError { return 58 }
        if error.underlying is any HTTP2ProtocolError { return 16 }
        if error.underlying is HTTP2StreamReset { return 92 }
        if error.underlying is RangeNotSatisfiable { return 36 }
        if error.underlying is FTPActiveModeFailure { return 30 }
        if error.underlying is FTPCommandRefused { return 21 }
        if error.underlying is ProxyTunnelRefused { return 56 }
        if error.underlying is PublicKeyPinMismatch { return 90 }
        switch (error.underlying as? ProxyFailure)?.step {
        case .nameLookup?: return 5
        case .socksHandshake?: return 97
        case nil: break
        }
        switch (error.underlying as? ResponseCutShort)?.point {
        case .beforeResponse?: return 52
        case .inBody?: return 18
        case .inHead?, nil: break
        }
        return status(for: error.code)
    }

    /// The exit status of several transfers or operations: the last that failed, in their order (0 if none did), as curl's
    /// with `-Z` (curl 7.88 without it gives the last transfer's, 0 after a failure then a success; this tool does not).
    static func lastFailure<Statuses: Sequence<Int32>>(_ statuses: Statuses) -> Int32 {
        var last: Int32 = 0
        for status in statuses where status != 0 { last = status }
        return last
    }

    /// The exit status for a load that failed with `code`.
    public static func status(for code: LoadError.Code) -> Int32 {
        switch code {
        case .unsupportedURL: return 1
        case .badURL: return malformedURL
        case .cannotFindHost: return 6
        case .cannotConnectToHost: return 7
        case .cannotWriteToFile, .cannotCreateFile: return 23
        case .requestBodyStreamExhausted: return 26
        case .timedOut: return 28
        case .secureConnectionFailed: return 35
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateWrongHost: return 60
        case .fileDoesNotExist, .fileIsDirectory, .noPermissionsToReadFile: return 37
        case .httpTooManyRedirects: return 47
        // The server's refusal of the client certificate: curl's 56 too, since TLS 1.3 hears it on the first read.
        case .networkConnectionLost, .badServerResponse, .cannotParseResponse, .handlerContractViolation,
             .clientCertificateRequired, .clientCertificateRejected: return 56
        case .cannotDecodeContentData: return 61
        case .dataLengthExceedsMaximum: return 63
        case .userAuthenticationRequired, .userCancelledAuthentication: return 67
        case .resourceUnavailable, .redirectToNonExistentLocation: return 78
        case .cancelled: return 130
        default: return 99
        }
    }

    /// The body could not be written to its output (a full disk, a folder that does not exist).
    public static let cannotWriteOutput: Int32 = 23
    /// `-f` saw an HTTP status of 400 or more.
    public static let httpError: Int32 = 22
    /// Usage error.
    public static let usage: Int32 = 2
    /// A URL that cannot be read (a malformed glob too).
    public static let malformedURL: Int32 = 3
    /// A `-K` file that cannot be read (missing, unreadable, too large), as curl's 26.
    public static let unreadableConfig: Int32 = 26
}

/// A `-K` file that could not be read: not a usage error (curl exits 26 for it, not 2), and no usage is printed.
public struct ConfigFileUnreadable: Error, CustomStringConvertible {
    /// The file as named on the command line.
    public let file: String
    /// Why it could not be read (its description names the file).
    public let cause: any Error
    /// `-K: ` and the cause.
    public var description: String { "-K: \(cause)" }
}
