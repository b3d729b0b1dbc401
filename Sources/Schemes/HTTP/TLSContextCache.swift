import FoundationEssentials
import Loader
import NIOPosix
import NIOSSL
import Synchronization

/// One `NIOSSLContext` per distinct TLS setting: making one loads the trust store, which is too slow to
/// repeat for every connection (about 36 ms here, in a debug build).
///
/// Made once even when many connections open at once for a setting not seen before (an app's first requests,
/// all at once): the first asks for it to be made, the others wait for it. It is made on NIO's thread pool,
/// neither on Swift's cooperative pool (two threads on two cores, which every other task would wait behind) nor
/// on an event loop (a task that prefers one dials from there).
final class TLSContextCache: Sendable {
    private struct Key: Hashable {
        var options: HTTPClientOptions.TLSOptions
        var checksHostname: Bool
        var offersHTTP2: Bool
    }

    /// A setting's context, made or being made, with the client certificate's and key's files as they were when
    /// it was asked for: a certificate renewed in place is read again for the next connection, its context
    /// replacing the old one.
    private struct Entry {
        var identityFiles: [FileStamp]
        var context: Task<NIOSSLContext, any Error>
        /// Which making this is (the count of contexts made when it began).
        var making: Int
    }

    private let contexts = Locked<[Key: Entry]>([:])
    private let made = Atomic<Int>(0)

    /// How many contexts this cache has made (or tried to), for tests.
    var contextsMade: Int { made.load(ordering: .relaxed) }

    /// The context for `options`; `checksHostname: false` is for a connection whose trust the delegate
    /// decides (its verification callback replaces NIOSSL's, and the host-name check with it).
    ///
    /// `offersHTTP2`: the handshake offers `h2` and `http/1.1` by ALPN (without it, no ALPN at all, as before
    /// HTTP/2 was offered: a connection that carries WebSocket or a setting that turns HTTP/2 off).
    ///
    /// Throws a ``LoadError`` naming `url`; a context that could not be made is not kept (the files may be
    /// mended before the next connection).
    func context(for options: HTTPClientOptions.TLSOptions, checksHostname: Bool = true, offersHTTP2: Bool = false, url: URL) async throws -> NIOSSLContext {
        let identityFiles = FileStamp.of(options.clientCertificatePEMFile, options.clientPrivateKeyPEMFile)
        let key = Key(options: options, checksHostname: checksHostname, offersHTTP2: offersHTTP2)
        let context = contexts.withLock { contexts -> Task<NIOSSLContext, any Error> in
            if let entry = contexts[key], entry.identityFiles == identityFiles { return entry.context }
            let number = made.add(1, ordering: .relaxed).newValue
            // Unstructured: a cancelled first asker must not fail the others waiting for the same context.
            let making = Task { [self] in
                do {
                    return try await NIOThreadPool.singleton.runIfActive {
                        try Self.makeContext(options, checksHostname: checksHostname, offersHTTP2: offersHTTP2, url: url)
                    }
                } catch {
                    // Let go at once (after the entry is in: it is put there under the lock this waits for), so that
                    // no asker after this one is given the failure.
                    self.contexts.withLock { if $0[key]?.making == number { $0[key] = nil } }
                    throw error
                }
            }
            contexts[key] = Entry(identityFiles: identityFiles, context: making, making: number)
            return making
        }
        do {
            return try await context.value
        } catch {
            guard var failure = error as? LoadError else {
                throw LoadError(.secureConnectionFailed, url: url, reason: "cannot set up TLS: \(error)", underlying: error)
            }
            // Made for the first connection that asked: each names its own URL.
            failure.url = url
            throw failure
        }
    }

    /// A new context for the setting, read from its files now.
    private static func makeContext(_ options: HTTPClientOptions.TLSOptions, checksHostname: Bool, offersHTTP2: Bool, url: URL) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        try TLSProtocolVersion.check(from: options.minimumVersion, through: options.maximumVersion, url: url)
        configuration.minimumTLSVersion = options.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        configuration.maximumTLSVersion = options.maximumVersion == .tls12 ? .tlsv12 : .tlsv13
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
                throw LoadError(.secureConnectionFailed, url: url, reason: "cannot read the trust roots in \(path): \(error)", underlying: error)
            }
        }
        if let certificatePath = options.clientCertificatePEMFile {
            try Self.addClientIdentity(certificatePath, keyPath: options.clientPrivateKeyPEMFile ?? certificatePath,
                                       passphrase: options.clientPrivateKeyPassphrase, to: &configuration, url: url)
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            guard let path = options.clientCertificatePEMFile else {
                throw LoadError(.secureConnectionFailed, url: url, reason: "cannot set up TLS: \(error)", underlying: error)
            }
            // The key was read already: NIOSSL fails to load it into the context when BoringSSL finds it is not the
            // certificate's.
            let mismatch = (error as? NIOSSLError).map { if case .failedToLoadPrivateKey = $0 { true } else { false } } ?? false
            let why = mismatch ? "its private key is not the certificate's" : "\(error)"
            throw LoadError(.secureConnectionFailed, url: url, reason: "cannot use the client certificate in \(path): \(why)",
                            underlying: ClientIdentityError(path: options.clientPrivateKeyPEMFile ?? path, cause: error))
        }
        return context
    }

    /// Puts the client certificate chain in `certificatePath` and its private key in `keyPath` (the same file
    /// when they are kept together) into `configuration`, for servers that ask for a client certificate.
    private static func addClientIdentity(_ certificatePath: String, keyPath: String, passphrase: String?,
                                          to configuration: inout TLSConfiguration, url: URL) throws {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw LoadError(.secureConnectionFailed, url: url, reason: "cannot read the client certificate in \(certificatePath): \(Self.why(certificatePath, error))",
                            underlying: ClientIdentityError(path: certificatePath, cause: error))
        }
        guard !chain.isEmpty else {
            throw LoadError(.secureConnectionFailed, url: url, reason: "no PEM certificate in \(certificatePath) (the client certificate)",
                            underlying: ClientIdentityError(path: certificatePath, cause: nil))
        }
        let key: NIOSSLPrivateKey
        do {
            // Always through a callback, which gives BoringSSL the passphrase or an empty one: an encrypted key
            // without its passphrase then fails to decrypt, which is reported below.
            let bytes = Array((passphrase ?? "").utf8)
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem) { (supply: ([UInt8]) -> Void) in supply(bytes) }
        } catch {
            // A file that can be read but not decoded is most often an encrypted key without its (right) passphrase.
            let readable = FileManager.default.isReadableFile(atPath: keyPath)
            let why = !readable ? Self.why(keyPath, error)
                : passphrase == nil ? "not a PEM private key, or encrypted (give its passphrase)" : "not a PEM private key, or the passphrase is wrong"
            throw LoadError(.secureConnectionFailed, url: url, reason: "cannot read the client certificate's private key in \(keyPath): \(why)",
                            underlying: ClientIdentityError(path: keyPath, cause: error))
        }
        configuration.certificateChain = chain.map { .certificate($0) }
        configuration.privateKey = .privateKey(key)
    }

    /// Why the file at `path` could not be read: missing, unreadable, or not what was expected (NIOSSL's error).
    private static func why(_ path: String, _ error: any Error) -> String {
        if !FileManager.default.fileExists(atPath: path) { return "no such file" }
        if !FileManager.default.isReadableFile(atPath: path) { return "not readable" }
        return "\(error)"
    }
}
