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
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(HTTPSchemeHandler.self, fixtures: fixtures) }
        print(report)
        #expect(report.allPassed, "\(report)")
        #expect(report.outcome(of: .slowReaderBoundsMemory) == .passed)
        #expect(report.outcome(of: .doesNotBlockThreadPool) == .passed)
        #expect(report.outcome(of: .redirectIsReported) == .passed)
        // HTTP has no missing resource (a 404 is a response): every other property is checked.
        #expect(report.skippedProperties == [.missingResourceFails], "\(report)")
    }
}

