import FoundationEssentials
import Loader

/// The `ftp:` and `ftps:` handler, over libcurl (FTP only): downloads (`RETR`) streamed with backpressure,
/// uploads (`STOR`, for `PUT`; another method is `unsupportedURL`), directory listings for a URL ending in `/` (the
/// raw listing as `text/plain`; ``FTPListing/parse(_:)`` reads it), byte ranges (`REST`; the response's
/// `Content-Range` says where the body starts, with the file's size when the range ran to its end; a range from
/// the file's size gives an empty body), and FTPS —
/// `ftps://` is implicit TLS, `ftp://` with ``FTPOptions/tls`` explicit (`AUTH TLS`).
///
/// Login: the URL's user info, else anonymous. When the server refuses the login, the task's and the
/// session's delegates are asked (an ``AuthenticationChallenge`` whose method is `"FTP"`), then the
/// session's credential store; up to three credentials are tried.
///
/// Settings are ``FTPOptions``, per session or per request. The transfers to each server run on a libcurl multi
/// handle driven by a thread of its own, never on Swift's cooperative pool, so that a server slow to answer holds up
/// only its own transfers; cancelling a load removes its transfer at once and frees its handle.
///
/// A session keeps a control connection, logged in, for ``FTPOptions/idleConnectionTimeout`` (60 s) after
/// each load, and its next load of the same server with the same login and TLS settings runs on it without
/// connecting or logging in again (as curl does for several URLs); sessions never share one, nor loads with
/// different TLS settings. A download that finds its kept connection dropped by the server, before any byte
/// reached the reader, is tried once more on a new connection. Uploads always connect anew: an upload is not
/// retried, as the server may have begun writing the file. An upload connects only once its body has given its
/// first bytes (or ended empty): a body that cannot be read fails without the server emptying the file it names.
public final class FTPSchemeHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: no stored state beyond the base class's.

    /// `ftp` and `ftps`.
    override public class var supportedSchemes: Set<String> { ["ftp", "ftps"] }

    /// Closes the session's kept control connections (each sent `QUIT`) once none of its transfers runs.
    override public class func sessionDidEnd(_ identifier: Int) {
        CurlEngine.submitToAll(.sessionEnded(identifier))
    }

    /// Credentials tried after the server refused a login.
    static let maximumLoginAttempts = 3

    /// Runs the transfer, answering a refused login with the delegates' or the store's credential.
    @concurrent override public func load() async throws {
        guard let host = request.url.host(percentEncoded: false), !host.isEmpty else {
            throw LoadError(.badURL, url: request.url, reason: "the URL has no host")
        }
        // Only PUT stores: a POST's form, or a body a redirect kept, must not overwrite the file the URL names.
        let method = request.method
        let hasBody = request.body.map { $0.knownLength != 0 } ?? false
        guard method == .put || ((method == .get || method == .head) && !hasBody) else {
            throw LoadError(.unsupportedURL, url: request.url,
                            reason: "ftp: supports GET and HEAD, and PUT to upload; not \(method.rawValue)\(hasBody ? " with a body" : "")")
        }
        let engine = try CurlEngine.engine(for: request, options: request.options[FTPOptions.self])
        defer { engine.release() }
        var credential: Credential?
        var failures = 0
        var newConnection = false
        while true {
            let transfer = try CurlTransfer(handler: self, credential: credential, engine: engine, newConnection: newConnection)
            do {
                try await engine.run(transfer)
                return
            } catch where transfer.failedOnLostKeptConnection && !newConnection && !Task.isCancelled {
                // The server had dropped the session's kept connection (or dropped it as it was reused), and
                // nothing reached the reader: once more on a new connection, as a browser retries a request
                // on a stale keep-alive connection.
                newConnection = true
            } catch let error as LoadError where error.code == .userAuthenticationRequired && failures < Self.maximumLoginAttempts {
                let scheme = request.scheme
                let space = ProtectionSpace(host: host, port: request.url.port ?? (scheme == "ftps" ? 990 : 21), scheme: scheme,
                                            realm: nil, authenticationMethod: "FTP")
                let challenge = AuthenticationChallenge(protectionSpace: space, previousFailureCount: failures, proposedCredential: credential)
                guard case .useCredential(let next) = await client.handler(self, didReceive: challenge), !Task.isCancelled else {
                    throw error
                }
                // An upload's body is read again from its start: a pipe's would give only what the first try left.
                if let body = request.body, !body.canBeSentAgain {
                    throw body.notSentAgain(to: request.url, for: "logging in to \(host) again")
                }
                failures += 1
                credential = next
            }
        }
    }
}
