import Foundation
import FTPScheme
import HandlerConformance
import Loader
import TestSupport
import Testing

extension FTPServerTests {
@Suite("ftp: keeps the handler contract", .serialized)
struct FTPConformanceTests {
    @Test("The FTP handler passes the conformance suite against pyftpdlib")
    func conformance() async throws {
        let server = try FTPServers.require()
        let fixtures = ConformanceFixtures(
            success: [
                .init(url: try FTPServers.url("/hello.txt"), body: Data("Hello from FTP\n".utf8)),
                .init(url: try FTPServers.url("/300k.bin"), body: try FTPServers.file("/300k.bin")),
            ],
            missing: try FTPServers.url("/nope.bin"),
            large: try FTPServers.url("/512m.bin"),
            slow: try FTPServers.url("/slow.bin", port: server.slowPort),
            largeSHA256: try await sha256sum(ofFile: server.root + "/512m.bin")
        )
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(FTPSchemeHandler.self, fixtures: fixtures) }
        print(report)
        #expect(report.allPassed, "\(report)")
        #expect(report.outcome(of: .slowReaderBoundsMemory) == .passed)
        #expect(report.outcome(of: .cancellationReleasesResources) == .passed)
        #expect(report.outcome(of: .doesNotBlockThreadPool) == .passed)
    }
}
}
