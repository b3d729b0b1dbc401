import DataScheme
import FileScheme
import Foundation
import HandlerConformance
import Loader
import TestSupport
import Testing

@Suite("The built-in handlers keep the contract", .serialized)
struct BuiltInHandlersConformanceTests {
    @Test("data: passes the conformance suite")
    func dataScheme() async throws {
        let fixtures = ConformanceFixtures(success: [
            .init(url: URL(string: "data:,Hello%2C%20World")!, body: Data("Hello, World".utf8)),
            .init(url: URL(string: "data:application/octet-stream;base64,AAECAwQFBgcICQ==")!, body: Data(0..<10)),
        ])
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(DataSchemeHandler.self, fixtures: fixtures) }
        print(report)
        #expect(report.allPassed, "\(report)")
        #expect(report.outcome(of: .bodyMatchesFixture) == .passed)
    }

    @Test("file: passes the conformance suite")
    func fileScheme() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = Data("small file\n".utf8)
        let medium = Data((0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try small.write(to: directory.appendingPathComponent("small.txt"))
        try medium.write(to: directory.appendingPathComponent("medium.bin"))
        let large = directory.appendingPathComponent("large.bin")
        #expect(FileManager.default.createFile(atPath: large.path, contents: nil))
        let handle = try FileHandle(forWritingTo: large)
        try handle.truncate(atOffset: 160 * 1024 * 1024)  // sparse: no disk needed
        try handle.close()

        let fixtures = ConformanceFixtures(
            success: [
                .init(url: directory.appendingPathComponent("small.txt"), body: small),
                .init(url: directory.appendingPathComponent("medium.bin"), body: medium),
            ],
            missing: directory.appendingPathComponent("missing.txt"),
            missingErrorCode: .fileDoesNotExist,
            large: large,
            largeSHA256: try await sha256sum(ofFile: large.path)
        )
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(FileSchemeHandler.self, fixtures: fixtures) }
        print(report)
        #expect(report.allPassed, "\(report)")
        #expect(report.outcome(of: .slowReaderBoundsMemory) == .passed)
        #expect(report.outcome(of: .cancellationReleasesResources) == .passed)
    }
}
