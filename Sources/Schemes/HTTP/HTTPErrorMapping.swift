import FoundationEssentials
import Loader
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Turns NIO, TLS and parser errors into ``LoadError`` codes a URLSession user knows.
enum HTTPErrorMapping {
    /// The most a response's head may hold, as curl reads: 100 KiB in one field, 300 KiB in all (NIO's default is 80 KiB
    /// for each).
    static let headLimits: NIOHTTPDecoderLimitConfiguration = {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 100 * 1024
        limits.maxHeaderListSize = 300 * 1024
        return limits
    }()

    static func map(_ error: any Error, url: URL) -> LoadError {
        switch error {
        case let error as LoadError:
            return error.url == nil ? LoadError(error.code, url: url, reason: error.reason, underlying: error.underlying) : error
        case is CancellationError:
            return LoadError(.cancelled, url: url)
        case HTTPParserError.headerOverflow:
            return LoadError(.badServerResponse, url: url,
                             reason: "the response's head is too long: over \(headLimits.maxHeaderFieldSize / 1024) KiB in a field or \(headLimits.maxHeaderListSize / 1024) KiB in all",
                             underlying: error)
        case HTTPParserError.unexpectedContentLength:
            return LoadError(.badServerResponse, url: url, reason: "malformed HTTP response: it gives both a Content-Length and a Transfer-Encoding, or two lengths", underlying: error)
        case let error as HTTPParserError:
            return LoadError(.badServerResponse, url: url, reason: "malformed HTTP response: \(error)", underlying: error)
        case let error as NIOHTTPDecoderError where error == .unsolicitedResponse:
            return LoadError(.badServerResponse, url: url, reason: "the server sent a response before the request", underlying: error)
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return LoadError(.serverCertificateWrongHost, url: url, reason: "the certificate does not name the host \(url.host ?? "")", underlying: error)
        case let error as NIOSSLError:
            return tls(error, url: url)
        case let error as BoringSSLError:
            // A TLS failure after the handshake: under TLS 1.3 a server's refusal of the client's certificate
            // comes as an alert on the first read.
            return tls(error, url: url)
        case let error as NIOConnectionError:
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return LoadError(.cannotFindHost, url: url, reason: "cannot resolve \(error.host)", underlying: error)
            }
            // One attempt speaks for all, in the reason and the cause alike: a refused one if any address refused
            // (`localhost` on a host without IPv6 fails on ::1 first), else the first.
            let attempt = error.connectionErrors.first { ($0.error as? IOError)?.errnoCode == ECONNREFUSED } ?? error.connectionErrors.first
            let cause = attempt.map { ": " + describe($0.error) } ?? ""
            let system = (attempt?.error as? IOError).flatMap { POSIXError(errno: $0.errnoCode) }
            return LoadError(.cannotConnectToHost, url: url, reason: "cannot connect to \(error.host):\(error.port)\(cause)",
                             underlying: system ?? error)
        case let error as HTTP2ProtocolViolation:
            return LoadError(.badServerResponse, url: url, reason: error.description, underlying: error)
        case let error as HTTP2MalformedStatus:
            return LoadError(.badServerResponse, url: url, reason: error.description, underlying: error)
        case let error as ServerPrefaceCheck.AnsweredInHTTP1:
            return LoadError(.badServerResponse, url: url, reason: error.description, underlying: error)
        case let error as HTTP2StreamRefused:
            return LoadError(.networkConnectionLost, url: url, reason: "the server did not process the request (its HTTP/2 stream was refused)", underlying: error)
        case let error as NIOHTTP2Errors.StreamClosed:
            let reset = HTTP2StreamReset(error)
            return LoadError(.networkConnectionLost, url: url, reason: reset.description, underlying: reset)
        case ChannelError.connectTimeout(let timeout):
            return LoadError(.timedOut, url: url, reason: "connecting took longer than \(timeout)", underlying: error)
        case let error as IOError:
            let underlying: any Error = POSIXError(errno: error.errnoCode) ?? error
            switch error.errnoCode {
            case ECONNREFUSED: return LoadError(.cannotConnectToHost, url: url, reason: "connection refused", underlying: underlying)
            case ECONNRESET, EPIPE: return LoadError(.networkConnectionLost, url: url, reason: "the connection was reset", underlying: underlying)
            default: return LoadError(.networkConnectionLost, url: url, reason: describe(error), underlying: underlying)
            }
        case ChannelError.ioOnClosedChannel, ChannelError.alreadyClosed, ChannelError.eof, ChannelPipelineError.notFound:
            return LoadError(.networkConnectionLost, url: url, reason: "the connection closed", underlying: error)
        default:
            return LoadError(.unknown, url: url, underlying: error)
        }
    }

    /// A failed connect to the Unix socket at `path` (``HTTPClientOptions/unixSocketPath``): a socket that is
    /// missing, refuses, or is not a socket is `cannotConnectToHost` with the system's reason, as a host's would be.
    static func unixSocket(_ error: any Error, path: String, url: URL) -> LoadError {
        let reason: String
        let underlying: any Error
        switch error {
        case let error as IOError:
            reason = describe(error)
            underlying = POSIXError(errno: error.errnoCode) ?? error
        case ChannelError.connectTimeout:
            return LoadError(.timedOut, url: url, reason: "connecting to the Unix socket \(path) took too long", underlying: error)
        case is CancellationError, is LoadError:
            return map(error, url: url)
        case SocketAddressError.unixDomainSocketPathTooLong:
            reason = "the path is longer than a socket's address holds"
            underlying = error
        default:
            reason = String(describing: error)
            underlying = error
        }
        return LoadError(.cannotConnectToHost, url: url, reason: "cannot connect to the Unix socket \(path): \(reason)", underlying: underlying)
    }

    /// A system call's failure as the C library words it ("Connection refused"), not as NIO's `IOError`
    /// describes itself ("connection reset (error set): Connection refused (errno: 111)").
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? IOError else { return String(describing: error) }
        return String(cString: strerror(error.errnoCode))
    }

    private static func tls(_ error: any Error, url: URL) -> LoadError {
        let text = String(describing: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("certificate verify failed") {
            if text.contains("expired") {
                return LoadError(.serverCertificateHasBadDate, url: url, reason: "the server's certificate has expired", underlying: error)
            }
            return LoadError(.serverCertificateUntrusted, url: url, reason: "the server's certificate is not trusted", underlying: error)
        }
        if let refusal = ClientCertificateAlert.error(in: text, url: url, detail: text, underlying: error) { return refusal }
        if case .uncleanShutdown? = error as? NIOSSLError {
            return LoadError(.networkConnectionLost, url: url, reason: "the TLS connection closed without close_notify", underlying: error)
        }
        return LoadError(.secureConnectionFailed, url: url, reason: "TLS failed: \(text)", underlying: error)
    }
}
