import FileScheme
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Loader
import TestSupport
import Testing

/// PUTs that cannot, or should not, replace the target by renaming a new file over it.
@Suite("file: PUT where a file beside the target cannot be made, or must keep what the target had")
struct FilePutInPlaceTests {
    private let session = fileSession()

    @Test("A file of /proc is written in place (no file can be made beside it): the process's coredump_filter takes the value it had")
    func pseudoFile() async throws {
        let target = URL(fileURLWithPath: "/proc/self/coredump_filter")
        // Read through the handler: the file says it is empty, whatever it holds.
        let (before, _) = try await session.data(from: target)
        #expect(!before.isEmpty)
        // It prints hex and reads C's notation (a leading 0 is octal): the same value goes back as 0x….
        let value = "0x" + String(decoding: before, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try await session.upload(for: LoadRequest(url: target, method: .put), from: Data(value.utf8))
        let (after, _) = try await session.data(from: target)
        #expect(after == before, "\(String(decoding: after, as: UTF8.self)) against \(String(decoding: before, as: UTF8.self))")
    }

    @Test("A target whose name is 250 bytes long is replaced: the temporary file's name is cut to fit in 255")
    func longName() async throws {
        let scratch = try Scratch()
        let target = try scratch.file(String(repeating: "n", count: 246) + ".txt", Data("old".utf8))
        _ = try await session.upload(for: LoadRequest(url: target, method: .put), from: Data("new".utf8))
        #expect(try String(contentsOf: target, encoding: .utf8) == "new")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == [target.lastPathComponent])
    }

    @Test("A file root replaces for another user keeps that user as its owner and group", .enabled(if: getuid() == 0))
    func ownerKept() async throws {
        let scratch = try Scratch()
        let target = try scratch.file("theirs.txt", Data("old".utf8))
        #expect(chown(target.path, 65534, 65534) == 0)
        _ = try await session.upload(for: LoadRequest(url: target, method: .put), from: Data("new".utf8))
        var info = stat()
        #expect(stat(target.path, &info) == 0)
        #expect(info.st_uid == 65534 && info.st_gid == 65534, "owner \(info.st_uid), group \(info.st_gid)")
        #expect(try String(contentsOf: target, encoding: .utf8) == "new")
    }
}
