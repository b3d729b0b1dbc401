import Foundation
import FTPScheme
import Loader
import TestSupport
import Testing

/// The lowest and highest TLS versions of FTPS (`FTPOptions.minimumTLSVersion`, `maximumTLSVersion`), against pyftpdlib
/// servers that speak TLS 1.2 alone and TLS 1.3 alone.
@Suite("FTPS: the lowest and highest TLS versions (pyftpdlib)")
struct FTPTLSVersionTests {
    private func session(minimum: TLSProtocolVersion? = nil, maximum: TLSProtocolVersion? = nil) throws -> LoaderSession {
        let ca = try FTPServers.require().caFile
        return FTPServers.session {
            $0.handlerOptions[FTPOptions.self].tls = .required
            $0.handlerOptions[FTPOptions.self].trustRootsPEMFile = ca
            if let minimum { $0.handlerOptions[FTPOptions.self].minimumTLSVersion = minimum }
            if let maximum { $0.handlerOptions[FTPOptions.self].maximumTLSVersion = maximum }
        }
    }

    @Test("By default either server loads; a minimum of 1.3 refuses the 1.2 server, a maximum of 1.2 the 1.3 one (secureConnectionFailed, naming the URL)")
    func bounds() async throws {
        let server = try FTPServers.require()
        let old = try FTPServers.url("/hello.txt", port: server.tls12Port, host: "localhost")
        let modern = try FTPServers.url("/hello.txt", port: server.tls13Port, host: "localhost")
        for url in [old, modern] {
            let (data, _) = try await session().data(from: url)
            #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n", "\(url)")
        }
        let tooOld = await loadError { _ = try await session(minimum: .tls13).data(from: old) }
        #expect(tooOld?.code == .secureConnectionFailed && tooOld?.url == old, "\(String(describing: tooOld))")
        let tooNew = await loadError { _ = try await session(maximum: .tls12).data(from: modern) }
        #expect(tooNew?.code == .secureConnectionFailed && tooNew?.url == modern, "\(String(describing: tooNew))")
        // Each bound lets its own server through.
        #expect(try await session(minimum: .tls13).data(from: modern).0 == Data("Hello from FTP\n".utf8))
        #expect(try await session(maximum: .tls12).data(from: old).0 == Data("Hello from FTP\n".utf8))
    }

    @Test("A minimum above the maximum fails at once, saying so; plain FTP does not care")
    func noVersionLeft() async throws {
        let server = try FTPServers.require()
        let url = try FTPServers.url("/hello.txt", port: server.tls12Port, host: "localhost")
        let error = await loadError { _ = try await session(minimum: .tls13, maximum: .tls12).data(from: url) }
        #expect(error?.code == .secureConnectionFailed && error?.description.contains("TLSv1.3") == true, "\(String(describing: error))")
        let plain = FTPServers.session {
            $0.handlerOptions[FTPOptions.self].minimumTLSVersion = .tls13
            $0.handlerOptions[FTPOptions.self].maximumTLSVersion = .tls12
        }
        #expect(try await plain.data(from: FTPServers.url("/hello.txt")).0 == Data("Hello from FTP\n".utf8))
    }
}
