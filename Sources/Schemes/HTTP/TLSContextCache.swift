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
    }
    private let contexts = Locked<[Key: NIOSSLContext]>([:])

    /// The context for `options`; `checksHostname: false` is for a connection whose trust the delegate
    /// decides (its verification callback replaces NIOSSL's, and the host-name check with it).
    func context(for options: HTTPClientOptions.TLSOptions, checksHostname: Bool = true, url: URL) throws -> NIOSSLContext {
        let key = Key(options: options, checksHostname: checksHostname)
        if let cached = contexts.withLock({ $0[key] }) { return cached }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = options.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
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
