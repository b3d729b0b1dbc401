import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// The lowest and highest TLS versions (`TLSOptions.minimumVersion`, `maximumVersion`) and the version each exchange's
/// metrics name, against nginx: its usual ports speak TLS 1.2 and 1.3, `tls12Port` 1.2 alone.
@Suite("https: the lowest and highest TLS versions, and the version in the metrics (nginx)")
struct HTTPTLSVersionTests {
    private func session(minimum: TLSProtocolVersion? = nil, maximum: TLSProtocolVersion? = nil) throws -> LoaderSession {
        try Nginx.session {
            if let minimum { $0.handlerOptions[HTTPClientOptions.self].tls.minimumVersion = minimum }
            if let maximum { $0.handlerOptions[HTTPClientOptions.self].tls.maximumVersion = maximum }
        }
    }

    /// The body and each exchange's negotiated version of a load of `url` through `session`.
    private func load(_ url: URL, through session: LoaderSession) async throws -> (String, [TLSProtocolVersion?]) {
        let recorder = HTTPMetricsTests.Recorder()
        let (data, _) = try await session.data(for: LoadRequest(url: url), delegate: recorder)
        let versions = recorder.finished.withLock { $0.first?.transactions.map(\.negotiatedTLSProtocolVersion) } ?? []
        return (String(decoding: data, as: UTF8.self), versions)
    }

    @Test("By default TLS 1.3 where the server speaks it, 1.2 where it speaks nothing newer; a maximum of 1.2 speaks 1.2 to either")
    func negotiated() async throws {
        let nginx = try Nginx.require()
        let modern = try Nginx.https("/hello.txt")
        let old = URL(string: "https://localhost:\(nginx.tls12Port)/hello.txt")!
        let (body, versions) = try await load(modern, through: session())
        #expect(body == "Hello from nginx\n" && versions == [.tls13])
        #expect(try await load(old, through: session()).1 == [.tls12])
        let capped = try session(maximum: .tls12)
        #expect(try await load(modern, through: capped).1 == [.tls12])
        #expect(try await load(old, through: capped).1 == [.tls12])
        // Plain HTTP has none.
        #expect(try await load(Nginx.http("/hello.txt"), through: session()).1 == [nil])
    }

    @Test("A reused connection's exchanges name its version too, over HTTP/1.1 and HTTP/2, as URLSession's metrics do")
    func reused() async throws {
        let nginx = try Nginx.require()
        for port in [nginx.httpsPort, nginx.h2Port] {
            let session = try session(maximum: .tls12)
            let url = URL(string: "https://localhost:\(port)/hello.txt")!
            _ = try await load(url, through: session)
            let recorder = HTTPMetricsTests.Recorder()
            _ = try await session.data(for: LoadRequest(url: url), delegate: recorder)
            let transaction = try #require(recorder.finished.withLock { $0.first?.transactions.first })
            #expect(transaction.isReusedConnection && transaction.negotiatedTLSProtocolVersion == .tls12, "port \(port)")
        }
    }

    @Test("A minimum of 1.3 fails against a server of 1.2 alone (secureConnectionFailed, naming the URL) and loads from the others")
    func minimum() async throws {
        let nginx = try Nginx.require()
        let old = URL(string: "https://localhost:\(nginx.tls12Port)/hello.txt")!
        let strict = try session(minimum: .tls13)
        let error = await loadError { _ = try await strict.data(from: old) }
        #expect(error?.code == .secureConnectionFailed && error?.url == old, "\(String(describing: error))")
        #expect(try await load(Nginx.https("/hello.txt"), through: strict).1 == [.tls13])
        // A request may ask for its own: a connection its session opened with TLS 1.2 is not lent to it.
        let session = try session()
        #expect(try await load(old, through: session).1 == [.tls12])
        var request = LoadRequest(url: old)
        request.options[HTTPClientOptions.self].tls.minimumVersion = .tls13
        let refused = await loadError { _ = try await session.data(for: request) }
        #expect(refused?.code == .secureConnectionFailed, "\(String(describing: refused))")
    }

    @Test("A minimum above the maximum fails every https load at once, saying so")
    func noVersionLeft() async throws {
        let url = try Nginx.https("/hello.txt")
        let error = await loadError { _ = try await session(minimum: .tls13, maximum: .tls12).data(from: url) }
        #expect(error?.code == .secureConnectionFailed && error?.url == url, "\(String(describing: error))")
        #expect(error?.description.contains("TLSv1.3") == true && error?.description.contains("TLSv1.2") == true, "\(String(describing: error))")
    }

    @Test("A request's versions are merged over its session's, setting by setting")
    func merged() {
        var session = HTTPClientOptions()
        session.tls.maximumVersion = .tls12
        var request = HTTPClientOptions()
        request.tls.minimumVersion = .tls12
        let merged = HTTPClientOptions.merged(request, over: session)
        #expect(merged.tls.minimumVersion == .tls12 && merged.tls.maximumVersion == .tls12)
        #expect(TLSProtocolVersion.tls12 < .tls13 && "\(TLSProtocolVersion.tls13)" == "TLSv1.3")
    }
}
