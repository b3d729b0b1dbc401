import Foundation
import FTPScheme
import Loader
import TestSupport
import Testing

@Suite("FTPS: a client certificate for a server that asks for one (pyftpdlib)")
struct FTPClientCertificateTests {
    /// The server that wants a certificate, the certificates, and a URL on it (by name: the server's certificate names localhost).
    private func fixture() throws -> (TestServers.MutualTLS, URL, String) {
        let server = try FTPServers.require()
        let tls = try #require(TestServers.mutualTLS, "the mutual-TLS certificates could not be made by scripts/test-servers")
        return (tls, try FTPServers.url("/hello.txt", port: server.clientCertificatePort, host: "localhost"), server.caFile)
    }

    /// A session requiring FTPS, trusting the test CA, showing the certificate `identity` sets.
    private func session(ca: String, _ identity: (inout FTPOptions) -> Void = { _ in }) -> LoaderSession {
        FTPServers.session {
            $0.handlerOptions[FTPOptions.self].tls = .required
            $0.handlerOptions[FTPOptions.self].trustRootsPEMFile = ca
            identity(&$0.handlerOptions[FTPOptions.self])
        }
    }

    @Test("A certificate from the CA the server trusts downloads; its key apart and encrypted, or in the same file")
    func shown() async throws {
        let (tls, url, ca) = try fixture()
        let (data, _) = try await session(ca: ca) {
            $0.clientCertificatePEMFile = tls.certificate
            $0.clientPrivateKeyPEMFile = tls.encryptedKey
            $0.clientPrivateKeyPassphrase = tls.passphrase
        }.data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")
        let (combined, _) = try await session(ca: ca) { $0.clientCertificatePEMFile = tls.combined }.data(from: url)
        #expect(String(decoding: combined, as: UTF8.self) == "Hello from FTP\n")
    }

    /// Whether `error` is the server's refusal: the code `alert` gives when libcurl read the server's TLS alert, or the
    /// lost connection it reports when it did not (it raced the alert with its next command), saying why.
    private func isRefusal(_ error: LoadError?, _ alert: LoadError.Code) -> Bool {
        guard let error else { return false }
        return error.code == alert || (error.code == .networkConnectionLost && error.reason?.contains("wants a client certificate") == true)
    }

    @Test("Without a certificate the load fails with clientCertificateRequired; with a stranger's, clientCertificateRejected")
    func refused() async throws {
        let (tls, url, ca) = try fixture()
        let none = await loadError { _ = try await session(ca: ca).data(from: url) }
        #expect(isRefusal(none, .clientCertificateRequired), "\(String(describing: none))")
        #expect(none?.url == url)
        let stranger = await loadError {
            _ = try await session(ca: ca) { $0.clientCertificatePEMFile = tls.strangerCertificate; $0.clientPrivateKeyPEMFile = tls.strangerKey }
                .data(from: url)
        }
        #expect(isRefusal(stranger, .clientCertificateRejected), "\(String(describing: stranger))")
    }

    @Test("An encrypted key without its passphrase fails as the caller's certificate problem (ClientIdentityError)")
    func lockedKey() async throws {
        let (tls, url, ca) = try fixture()
        let error = await loadError {
            _ = try await session(ca: ca) { $0.clientCertificatePEMFile = tls.certificate; $0.clientPrivateKeyPEMFile = tls.encryptedKey }
                .data(from: url)
        }
        #expect(error?.code == .secureConnectionFailed, "\(String(describing: error))")
        #expect((error?.underlying as? ClientIdentityError)?.path == tls.encryptedKey, "the key is at fault, not the certificate")
        #expect(error?.url == url)
    }
}
