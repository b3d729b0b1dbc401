import FoundationEssentials
import Loader

/// A TLS handshake with an HTTPS proxy that failed: the `underlying` of the load's error, which names the proxy, so
/// that it is told from the server's own refusal (which a delegate may overrule; the proxy's it is not asked about).
struct ProxyTLSFailure: Error, CustomStringConvertible {
    /// What NIOSSL or the connection reported.
    let underlying: any Error

    var description: String { "the HTTPS proxy's TLS handshake failed: \(underlying)" }

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
