import Foundation
import Loader
import TestSupport
import Testing

@Suite("file: writes to a full disk")
struct FileFullDiskTests {
    @Test("A PUT that fills the disk fails with cannotWriteToFile naming the URL and the cause, and keeps the old file whole")
    func put() async throws {
        try await TestServers.withFullDisk { folder in
            let target = folder.appendingPathComponent("kept.txt")
            try Data("the old contents".utf8).write(to: target)
            let body = Data(repeating: 0x61, count: 1 << 20)
            let error = await loadError { _ = try await fileSession().upload(for: LoadRequest(url: target, method: .put), from: body) }
            #expect(fullDiskFailureProblem(error, url: target) == nil)
            #expect(try String(contentsOf: target, encoding: .utf8) == "the old contents")
            #expect(filesLeft(in: folder) == ["kept.txt"], "a temporary file stayed: \(filesLeft(in: folder))")
        }
    }

    @Test("A download of a file: URL to a full disk fails with cannotWriteToFile naming the URL, and leaves no file")
    func download() async throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("full-disk-source-\(UUID().uuidString)")
        try Data(repeating: 0x62, count: 1 << 20).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        try await TestServers.withFullDisk { folder in
            let error = await loadError { _ = try await fileSession { $0.temporaryDirectory = folder }.download(from: source) }
            #expect(fullDiskFailureProblem(error, url: source) == nil)
            #expect(filesLeft(in: folder).isEmpty, "the partial download stayed: \(filesLeft(in: folder))")
        }
    }
}
