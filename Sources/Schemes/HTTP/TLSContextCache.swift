import FoundationEssentials
import Loader
import NIOSSL
import Synchronization

/// One `NIOSSLContext` per distinct TLS setting: making one loads the trust store, which is too slow to
/// repeat for every connection.
final class TLSContextCache: Sendable {
    private struct Key: Hashable {
        var options: HTTPClientOptions.TLSOptions
        var checksHostname: Bool
        var offersHTTP2: Bool
    }
    private let contexts = Locked<[Key: NIOSSLContext]>([:])

    /// The context for `options`; `checksHostname: false` is for a connection whose trust the delegate
    /// decides (its verification callback replaces NIOSSL's, and the host-name check with it).
    ///
    /// `offersHTTP2`: the handshake offers `h2` and `http/1.1` by ALPN (without it, no ALPN at all, as before
    /// HTTP/2 was offered: a connection that carries WebSocket or a setting that turns HTTP/2 off).
    func context(for options: HTTPClientOptions.TLSOptions, checksHostname: Bool = true, offersHTTP2: Bool = false, url: URL) throws -> NIOSSLContext {
        let key = Key(options: options, checksHostname: checksHostname, offersHTTP2: offersHTTP2)
        if let cached = contexts.withLock({ $0[key] }) { return cached }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = options.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        if offersHTTP2 { configuration.applicationProtocols = ["h2", "http/1.1"] }
        if !options.verifiesCertificates {
            configuration.certificateVerification = .none
        } else if !checksHostname {
            configuration.certificateVerification = .noHostnameVerification
        }
        if let path = options.additionalTrustRootsPEMFile {
            do {
                let certificates = try NIOSSLCertificate.fromPEMFile(path)
                configuration.additionalTrustRoots = [.certificates(certificates)]
            } catch {
                throw LoadError(.secureConnectionFailed, url: url, reason: "cannot read the trust roots in \(path)", underlying: error)
            }
        }
        let context = try NIOSSLContext(configuration: configuration)
        contexts.withLock { $0[key] = context }
        return context
    }
}
