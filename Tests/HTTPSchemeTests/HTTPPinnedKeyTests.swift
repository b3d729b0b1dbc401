import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// Public key pinning (`TLSOptions.pinnedPublicKeys`) against nginx, whose certificate's pin is worked out here with
/// the openssl command line, as curl's documentation does it, not with the code under test.
@Suite("https: pinned public keys against nginx")
struct HTTPPinnedKeyTests {
    /// `sha256//` and the base64 SHA-256 of the DER SubjectPublicKeyInfo of nginx's certificate, by openssl.
    static func nginxPin() throws -> String {
        let certificate = URL(fileURLWithPath: try Nginx.require().caFile).deletingLastPathComponent().appendingPathComponent("server.pem").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64", "sh", certificate]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let base64 = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(process.terminationStatus == 0 && base64.count == 44, "openssl gave '\(base64)'")
        return "sha256//" + base64
    }

    private func session(pins: Set<String>, verifying: Bool = true) throws -> LoaderSession {
        try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].tls.pinnedPublicKeys = pins
            $0.handlerOptions[HTTPClientOptions.self].tls.verifiesCertificates = verifying
        }
    }

    @Test("The server's pin among the pins (with or without the sha256// prefix) loads, over HTTP/1.1 and HTTP/2")
    func matching() async throws {
        let pin = try Self.nginxPin()
        let bare = String(pin.dropFirst("sha256//".count))
        for pins in [[pin], ["sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", pin], [bare]] {
            let session = try session(pins: Set(pins))
            let (data, _) = try await session.data(from: Nginx.https("/hello.txt"))
            #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
            let (h2, response) = try await session.data(from: URL(string: "https://localhost:\(try Nginx.require().h2Port)/hello.txt")!)
            #expect(String(decoding: h2, as: UTF8.self) == "Hello from nginx\n" && response.networkProtocolName == "h2")
        }
    }

    @Test("Another key fails the load (and a WebSocket's opening) as untrusted, naming the URL, the server's pin and the pinned ones, even with verification off; a request's own pins are not met by its session's unpinned connection")
    func mismatch() async throws {
        let pin = try Self.nginxPin()
        let wrong = "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        let url = try Nginx.https("/hello.txt")
        for verifying in [true, false] {
            let error = await loadError { _ = try await session(pins: [wrong], verifying: verifying).data(from: url) }
            #expect(error?.code == .serverCertificateUntrusted && error?.url == url, "\(String(describing: error))")
            let mismatch = try #require(error?.underlying as? PublicKeyPinMismatch, "\(String(describing: error))")
            #expect(mismatch.found == pin && mismatch.pinned == [wrong])
        }
        // A WebSocket's TLS too (the WebSocket server shows nginx's certificate).
        let sockets = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
        let wss = URL(string: "wss://localhost:\(sockets.tlsPort)/echo")!
        let refusedSocket = await loadError { try await session(pins: [wrong]).webSocketTask(with: wss).send(.string("pinned")) }
        #expect(refusedSocket?.underlying is PublicKeyPinMismatch, "\(String(describing: refusedSocket))")
        let socket = try session(pins: [pin]).webSocketTask(with: wss)
        try await socket.send(.string("pinned"))
        #expect(try await socket.receive() == .string("pinned"))
        socket.cancel()
        // A connection made without pins is not lent to a request that pins another key.
        let plain = try Nginx.session()
        _ = try await plain.data(from: url)
        var request = LoadRequest(url: url)
        request.options[HTTPClientOptions.self].tls.pinnedPublicKeys = [wrong]
        let pinned = await loadError { _ = try await plain.data(for: request) }
        #expect(pinned?.underlying is PublicKeyPinMismatch, "\(String(describing: pinned))")
    }
}
