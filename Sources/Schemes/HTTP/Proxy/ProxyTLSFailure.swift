import FoundationEssentials
import Loader
import NIOSSL

/// A TLS failure with an HTTPS proxy (in its handshake, or after it: a TLS 1.3 refusal of the client's certificate comes
/// with the first read): the `underlying` of the load's error, which names the proxy, so that it is told from the
/// server's own (which a delegate may overrule; the proxy's it is not asked about).
struct ProxyTLSFailure: Error, CustomStringConvertible {
    /// What NIOSSL or the connection reported.
    let underlying: any Error

    var description: String { "TLS with the HTTPS proxy failed: \(underlying)" }

    /// Whether `error` is one of TLS's (NIOSSL's, or BoringSSL's from a read after the handshake).
    static func isTLS(_ error: any Error) -> Bool {
        error is NIOSSLError || error is BoringSSLError
    }

    /// The load's error for `error`, met in the handshake with `proxy`: mapped as a server's TLS failure would be (its
    /// code: an untrusted certificate, a wrong name, an expired one), said of the proxy, and naming the load's `url`.
    static func error(_ error: any Error, proxy: HTTPClientOptions.Proxy, url: URL) -> LoadError {
        let authority = HTTPClientOptions.Proxy.authority(proxy.host, proxy.port)
        // Mapped against the proxy's own URL, so that a wrong name names the proxy's host, not the server's.
        let mapped = HTTPErrorMapping.map(error, url: URL(string: "https://\(authority)/") ?? url)
        var reason = mapped.reason ?? mapped.code.description
        // Said of the proxy, which is the server of this TLS connection.
        if reason.hasPrefix("the server's ") {
            reason = "its " + reason.dropFirst("the server's ".count)
        } else if reason.hasPrefix("the server ") {
            reason = "it " + reason.dropFirst("the server ".count)
        }
        return LoadError(mapped.code, url: url, reason: "the proxy \(authority) (TLS): \(reason)", underlying: ProxyTLSFailure(underlying: mapped.underlying ?? error))
    }
}
