import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// The mutual-TLS servers; a test that needs them fails when they could not be started.
private func servers() throws -> TestServers.MutualTLS {
    try #require(TestServers.mutualTLS, "the mutual-TLS servers could not be started by scripts/test-servers")
}

/// A session trusting the test CA that shows the client certificate `identity` sets.
private func session(_ identity: (inout HTTPClientOptions.TLSOptions) -> Void = { _ in }, http2: Bool = true) throws -> LoaderSession {
    try Nginx.session { configuration in
        configuration.handlerOptions[HTTPClientOptions.self].allowsHTTP2 = http2
        identity(&configuration.handlerOptions[HTTPClientOptions.self].tls)
    }
}

private func nginxURL() throws -> URL { URL(string: "https://localhost:\(try servers().port)/")! }
private func strictURL() throws -> URL { URL(string: "https://localhost:\(try servers().strictPort)/")! }

@Suite("https: a client certificate for servers that ask for one (mutual TLS), against nginx and openssl s_server")
struct HTTPClientCertificateTests {
    @Test("A certificate from the CA the server trusts, with its key apart, is shown over HTTP/2 and HTTP/1.1", arguments: [true, false])
    func shown(http2: Bool) async throws {
        let tls = try servers()
        let (data, response) = try await session({ $0.clientCertificatePEMFile = tls.certificate; $0.clientPrivateKeyPEMFile = tls.key },
                                                 http2: http2).data(from: nginxURL())
        #expect(response.status == .ok)
        #expect(response.networkProtocolName == (http2 ? "h2" : "http/1.1"))
        let body = String(decoding: data, as: UTF8.self)
        #expect(body.contains("CN=loader test client"), "nginx names the certificate it was shown: \(body)")
        #expect(body.contains("verify=SUCCESS"))
    }

    @Test("The key is read from the certificate's file when no key file is given")
    func combinedFile() async throws {
        let tls = try servers()
        let (data, response) = try await session({ $0.clientCertificatePEMFile = tls.combined }).data(from: nginxURL())
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self).contains("CN=loader test client"))
    }

    @Test("An encrypted key is read with its passphrase")
    func encryptedKey() async throws {
        let tls = try servers()
        let (data, response) = try await session {
            $0.clientCertificatePEMFile = tls.certificate
            $0.clientPrivateKeyPEMFile = tls.encryptedKey
            $0.clientPrivateKeyPassphrase = tls.passphrase
        }.data(from: nginxURL())
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self).contains("verify=SUCCESS"))
    }

    @Test("An encrypted key without its passphrase, or with a wrong one, fails naming the key's file (no prompt on the terminal)",
          arguments: [nil, "not the passphrase"])
    func encryptedKeyWithoutPassphrase(passphrase: String?) async throws {
        let tls = try servers()
        let url = try nginxURL()
        let error = await loadError {
            _ = try await session {
                $0.clientCertificatePEMFile = tls.certificate
                $0.clientPrivateKeyPEMFile = tls.encryptedKey
                $0.clientPrivateKeyPassphrase = passphrase
            }.data(from: url)
        }
        #expect(error?.code == .secureConnectionFailed)
        #expect(error?.url == url)
        #expect((error?.underlying as? ClientIdentityError)?.path == tls.encryptedKey)
        #expect(error?.description.contains(tls.encryptedKey) == true)
    }

    @Test("A certificate file that does not exist fails naming it, before anything is sent")
    func missingCertificate() async throws {
        let missing = NSTemporaryDirectory() + "no-such-client-certificate-\(UUID().uuidString).pem"
        let url = try nginxURL()
        let error = await loadError { _ = try await session { $0.clientCertificatePEMFile = missing }.data(from: url) }
        #expect(error?.code == .secureConnectionFailed)
        #expect((error?.underlying as? ClientIdentityError)?.path == missing)
        #expect(error?.description.contains(missing) == true)
    }

    @Test("A key that is not the certificate's fails, saying so")
    func mismatchedKey() async throws {
        let tls = try servers()
        let error = await loadError {
            _ = try await session { $0.clientCertificatePEMFile = tls.certificate; $0.clientPrivateKeyPEMFile = tls.strangerKey }.data(from: nginxURL())
        }
        #expect(error?.code == .secureConnectionFailed)
        #expect(error?.underlying is ClientIdentityError)
        #expect(error?.reason?.contains("private key is not the certificate's") == true, "\(String(describing: error))")
    }

    @Test("nginx answers 400 without a certificate, and to one it does not trust: the response reaches the caller")
    func nginxRefusals() async throws {
        let tls = try servers()
        let (_, none) = try await session().data(from: nginxURL())
        #expect(none.status == .badRequest)
        let (_, stranger) = try await session { $0.clientCertificatePEMFile = tls.strangerCertificate; $0.clientPrivateKeyPEMFile = tls.strangerKey }
            .data(from: nginxURL())
        #expect(stranger.status == .badRequest)
    }

    @Test("A request's own certificate gets a connection of its own: one without a certificate is not reused for it")
    func perRequestCertificate() async throws {
        let tls = try servers()
        let shared = try session()
        let (_, first) = try await shared.data(from: nginxURL())
        #expect(first.status == .badRequest)
        var request = LoadRequest(url: try nginxURL())
        request.options[HTTPClientOptions.self].tls.clientCertificatePEMFile = tls.combined
        let (data, second) = try await shared.data(for: request)
        #expect(second.status == .ok)
        #expect(String(decoding: data, as: UTF8.self).contains("CN=loader test client"))
    }

    @Test("A request's own certificate comes with its own key: not with the key file its session names for another certificate")
    func requestCertificateOverSession() async throws {
        let tls = try servers()
        let shared = try session { $0.clientCertificatePEMFile = tls.strangerCertificate; $0.clientPrivateKeyPEMFile = tls.strangerKey }
        var request = LoadRequest(url: try nginxURL())
        request.options[HTTPClientOptions.self].tls.clientCertificatePEMFile = tls.combined
        let (data, response) = try await shared.data(for: request)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self).contains("CN=loader test client"))
    }

    @Test("A server that ends the handshake for want of a certificate fails the load with clientCertificateRequired, over HTTP/2 and HTTP/1.1",
          arguments: [true, false])
    func strictRequired(http2: Bool) async throws {
        let url = try strictURL()
        let error = await loadError { _ = try await session(http2: http2).data(from: url) }
        #expect(error?.code == .clientCertificateRequired, "\(String(describing: error))")
        #expect(error?.url == url)
    }

    @Test("A server that refuses the certificate it was shown fails the load with clientCertificateRejected, over HTTP/2 and HTTP/1.1",
          arguments: [true, false])
    func strictRejected(http2: Bool) async throws {
        let tls = try servers()
        let url = try strictURL()
        let error = await loadError {
            _ = try await session({ $0.clientCertificatePEMFile = tls.strangerCertificate; $0.clientPrivateKeyPEMFile = tls.strangerKey }, http2: http2)
                .data(from: url)
        }
        #expect(error?.code == .clientCertificateRejected, "\(String(describing: error))")
        #expect(error?.url == url)
    }

    @Test("A wss: handshake shows the certificate too: refused without it (clientCertificateRequired), past TLS with it")
    func webSocket() async throws {
        let tls = try servers()
        let url = URL(string: "wss://localhost:\(tls.strictPort)/")!
        let refused = await loadError { _ = try await session().webSocketTask(with: url).receive() }
        #expect(refused?.code == .clientCertificateRequired, "\(String(describing: refused))")
        #expect(refused?.url == url)
        // With the certificate, TLS holds and the server (no WebSocket server) answers the handshake's GET with a page.
        let answered = await loadError { _ = try await session { $0.clientCertificatePEMFile = tls.combined }.webSocketTask(with: url).receive() }
        #expect(answered?.code == .badServerResponse, "\(String(describing: answered))")
        #expect(answered?.reason?.contains("not 101") == true)
    }

    @Test("The same server accepts the certificate from its CA")
    func strictAccepted() async throws {
        let tls = try servers()
        let (data, response) = try await session({ $0.clientCertificatePEMFile = tls.combined }, http2: false).data(from: strictURL())
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self).contains("loader test client"), "s_server's status page names the client's certificate")
    }
}
