import CCurl
import FoundationEssentials
import Loader

/// Turns libcurl's result codes into ``LoadError`` codes, keeping libcurl's own message as the reason.
enum CurlErrorMapping {
    static func map(_ code: CURLcode, message: String, url: URL) -> LoadError {
        let text = message.isEmpty ? String(cString: ccurl_easy_strerror(code)) : message
        let reason = "\(text) (libcurl \(code.rawValue))"
        return LoadError(loadCode(code), url: url, reason: reason, underlying: underlying(code))
    }

    /// What the code says beyond the error's code: how far a response had come, for the codes that say its connection
    /// ended early; a range that starts past the file's end (libcurl's resume offset beyond the size); an active-mode
    /// data connection that could not be set up; a proxy whose name could not be resolved, or whose SOCKS handshake
    /// failed (libcurl's `CURLE_PROXY` is its SOCKS code).
    private static func underlying(_ code: CURLcode) -> (any Error)? {
        switch code {
        case CURLE_PARTIAL_FILE: return ResponseCutShort(.inBody(received: nil, expected: nil))
        case CURLE_GOT_NOTHING: return ResponseCutShort(.beforeResponse)
        case CURLE_BAD_DOWNLOAD_RESUME: return RangeNotSatisfiable(size: nil)
        case CURLE_FTP_PORT_FAILED: return FTPActiveModeFailure()
        case CURLE_COULDNT_RESOLVE_PROXY: return ProxyFailure(.nameLookup, proxy: nil)
        case CURLE_PROXY: return ProxyFailure(.socksHandshake, proxy: nil)
        default: return nil
        }
    }

    /// As ``map(_:message:url:)``, with what libcurl's code alone cannot tell, from the server's last reply code,
    /// whether the transfer was an upload, and libcurl's message.
    ///
    /// libcurl enters the URL's folders one by one, and a folder it cannot enter (550, missing far more often
    /// than forbidden) is `CURLE_REMOTE_ACCESS_DENIED`: for a download the file is not there to read, for an
    /// upload it cannot be created there. `CURLE_FTP_COULDNT_RETR_FILE` is any refusal of the download other
    /// than 550: a login the server wants (530), a data connection that failed (425, 426), or a file not
    /// available now (450, 451 and the rest), none of them a lost connection.
    static func map(_ code: CURLcode, message: String, url: URL, serverReply: Int, isUpload: Bool) -> LoadError {
        var error = map(code, message: message, url: url)
        // A server's TLS alert about the client's certificate, in OpenSSL's words in libcurl's message, whatever the code.
        if let refusal = ClientCertificateAlert.error(in: message, url: url, detail: error.reason ?? "") { return refusal }
        switch code {
        case CURLE_REMOTE_ACCESS_DENIED:
            error.code = isUpload ? .cannotCreateFile : .fileDoesNotExist
            error.reason = "the server would not enter a folder of the path, missing or not permitted: \(error.reason ?? "")"
        case CURLE_PEER_FAILED_VERIFICATION:
            // libcurl has one code for every certificate it refuses; its message (OpenSSL's words) tells which.
            let words = message.lowercased()
            if words.contains("expired") || words.contains("not yet valid") {
                error.code = .serverCertificateHasBadDate
            } else if words.contains("subject name") || words.contains("does not match") {
                error.code = .serverCertificateWrongHost
            }
        case CURLE_FTP_COULDNT_RETR_FILE:
            switch serverReply {
            case 530: error.code = .userAuthenticationRequired
            case 425, 426: error.code = .networkConnectionLost
            default: error.code = .resourceUnavailable
            }
            if serverReply > 0 { error.reason = "the server answered \(serverReply): \(error.reason ?? "")" }
        case CURLE_PARTIAL_FILE where isUpload && serverReply >= 400:
            // The server took the body, then refused it in its final reply (451, 452, 552 where 226 was due): not stored.
            error.code = .cannotWriteToFile
            error.underlying = nil
            error.reason = "the server answered \(serverReply) when the upload ended: \(error.reason ?? "")"
        default:
            break
        }
        return error
    }

    /// Whether a failure says the control connection went away under the transfer rather than that the server
    /// refused it: a 421 reply (the server closing the connection), or a connection that broke. On a kept
    /// connection this is what a server that dropped it while it sat idle looks like. Not a timeout: a connect
    /// that timed out made no connection either, and must not be waited for twice.
    static func isLostConnection(_ code: CURLcode, serverReply: Int) -> Bool {
        if serverReply == 421 { return true }
        switch code {
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_WEIRD_SERVER_REPLY:
            return true
        default:
            return false
        }
    }

    static func loadCode(_ code: CURLcode) -> LoadError.Code {
        switch code {
        case CURLE_LOGIN_DENIED: return .userAuthenticationRequired
        case CURLE_REMOTE_FILE_NOT_FOUND: return .fileDoesNotExist
        case CURLE_REMOTE_ACCESS_DENIED: return .noPermissionsToReadFile
        case CURLE_COULDNT_RESOLVE_HOST: return .cannotFindHost
        case CURLE_COULDNT_CONNECT, CURLE_FTP_ACCEPT_FAILED, CURLE_FTP_CANT_GET_HOST, CURLE_FTP_PORT_FAILED:
            return .cannotConnectToHost
        case CURLE_OPERATION_TIMEDOUT, CURLE_FTP_ACCEPT_TIMEOUT: return .timedOut
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_PINNEDPUBKEYNOTMATCH: return .serverCertificateUntrusted
        case CURLE_USE_SSL_FAILED, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_SHUTDOWN_FAILED:
            return .secureConnectionFailed
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_FTP_COULDNT_RETR_FILE:
            return .networkConnectionLost
        // A server that cannot resume (REST refused) or take the transfer type asked for (`;type=a`).
        case CURLE_BAD_DOWNLOAD_RESUME, CURLE_RANGE_ERROR, CURLE_FTP_COULDNT_USE_REST: return .resourceUnavailable
        case CURLE_FTP_COULDNT_SET_TYPE, CURLE_FTP_PRET_FAILED, CURLE_FTP_BAD_FILE_LIST: return .badServerResponse
        // The proxy's name, or the proxy's own failure (a SOCKS refusal), as the HTTP handler reports its proxy's.
        case CURLE_COULDNT_RESOLVE_PROXY: return .cannotFindHost
        case CURLE_PROXY: return .cannotConnectToHost
        case CURLE_UPLOAD_FAILED, CURLE_REMOTE_DISK_FULL: return .cannotWriteToFile
        case CURLE_URL_MALFORMAT: return .badURL
        case CURLE_UNSUPPORTED_PROTOCOL: return .unsupportedURL
        case CURLE_ABORTED_BY_CALLBACK: return .cancelled
        case CURLE_READ_ERROR: return .requestBodyStreamExhausted
        case CURLE_WEIRD_SERVER_REPLY, CURLE_FTP_WEIRD_PASS_REPLY, CURLE_FTP_WEIRD_PASV_REPLY,
             CURLE_FTP_WEIRD_227_FORMAT, CURLE_QUOTE_ERROR:
            return .badServerResponse
        default: return .unknown
        }
    }
}
