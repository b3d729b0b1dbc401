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

    @Test("A folder that a crashed test process left in the full-disk fixture is cleared for the next test; a live process's stays")
    func staleFolderCleared() async throws {
        var stale: URL?
        try await TestServers.withFullDisk { folder in
            // As a test process that died mid-write leaves it: a sibling folder holding most of the disk, named with a
            // process id no process has (above Linux's largest).
            let left = folder.deletingLastPathComponent().appendingPathComponent("test-2147483646-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: left, withIntermediateDirectories: false)
            try Data(repeating: 0x63, count: 200 << 10).write(to: left.appendingPathComponent("out.bin"))
            stale = left
        }
        let left = try #require(stale)
        // One of a process that runs (init's) is left alone.
        let live = left.deletingLastPathComponent().appendingPathComponent("test-1-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: live, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: live) }
        try await TestServers.withFullDisk { folder in
            #expect(!FileManager.default.fileExists(atPath: left.path), "the stale folder is still there")
            #expect(FileManager.default.fileExists(atPath: live.path), "a live process's folder was removed")
            // Room again for what a test writes.
            try Data(repeating: 0x64, count: 150 << 10).write(to: folder.appendingPathComponent("room.bin"))
        }
    }
}
