import Foundation
import Loader
import NIOSSL
import Synchronization

/// One `NIOSSLContext` per distinct TLS setting: making one loads the trust store, which is too slow to
/// repeat for every connection.
final class TLSContextCache: Sendable {
    private let contexts = Locked<[HTTPClientOptions.TLSOptions: NIOSSLContext]>([:])

    func context(for options: HTTPClientOptions.TLSOptions, url: URL) throws -> NIOSSLContext {
        if let cached = contexts.withLock({ $0[options] }) { return cached }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = options.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        if !options.verifiesCertificates {
            configuration.certificateVerification = .none
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
        contexts.withLock { $0[options] = context }
        return context
    }
}
