import Foundation
import HandlerConformance
import HTTPScheme
import Loader
import TestSupport
import Testing

@Suite("http: keeps the handler contract", .serialized)
struct HTTPConformanceTests {
    @Test("The HTTP handler passes the conformance suite against nginx")
    func conformance() async throws {
        let nginx = try Nginx.require()
        var fixtures = ConformanceFixtures(
            success: [
                .init(url: try Nginx.http("/hello.txt"), body: Data("Hello from nginx\n".utf8)),
                .init(url: try Nginx.http("/300k.bin"), body: try Data(contentsOf: URL(fileURLWithPath: nginx.root + "/300k.bin"))),
            ],
            large: try Nginx.http("/512m.bin"),
            slow: ScriptedServer.shared.url("/slow"),
            redirect: try Nginx.http("/redirect")
        )
        // nginx numbers its connections in X-Connection (for the keep-alive tests): it differs per load.
        fixtures.volatileFields.insert("x-connection")
        fixtures.largeSHA256 = try await sha256sum(ofFile: nginx.root + "/512m.bin")
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(HTTPSchemeHandler.self, fixtures: fixtures) }
        print(report)
        #expect(report.allPassed, "\(report)")
        #expect(report.outcome(of: .slowReaderBoundsMemory) == .passed)
        #expect(report.outcome(of: .doesNotBlockThreadPool) == .passed)
        #expect(report.outcome(of: .redirectIsReported) == .passed)
        // HTTP has no missing resource (a 404 is a response): every other property is checked.
        #expect(report.skippedProperties == [.missingResourceFails], "\(report)")
    }

    @Test("Over HTTP/2 (nginx's h2 port, its CA given through the fixtures' handler options), where a cancelled load's connection stays for the session's later loads, the handler passes too")
    func conformanceOverHTTP2() async throws {
        let nginx = try Nginx.require()
        func h2(_ path: String) -> URL { URL(string: "https://localhost:\(nginx.h2Port)\(path)")! }
        var fixtures = ConformanceFixtures(
            success: [
                .init(url: h2("/hello.txt"), body: Data("Hello from nginx\n".utf8)),
                .init(url: h2("/300k.bin"), body: try Data(contentsOf: URL(fileURLWithPath: nginx.root + "/300k.bin"))),
            ],
            large: h2("/512m.bin"),
            slow: ScriptedServer.shared.url("/slow"),
            redirect: h2("/redirect")
        )
        fixtures.volatileFields.insert("x-connection")
        fixtures.largeSHA256 = try await sha256sum(ofFile: nginx.root + "/512m.bin")
        fixtures.handlerOptions[HTTPClientOptions.self].tls.additionalTrustRootsPEMFile = nginx.caFile
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(HTTPSchemeHandler.self, fixtures: fixtures) }
        #expect(report.allPassed, "\(report)")
        #expect(report.outcome(of: .cancellationReleasesResources) == .passed)
        #expect(report.skippedProperties == [.missingResourceFails], "\(report)")
    }
}

