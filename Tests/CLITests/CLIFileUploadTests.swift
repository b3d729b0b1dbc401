import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// `-T` to `file:` URLs, where who may write what matters: run as another user (`setpriv`), so only when the tests
/// run as root.
@Suite("loadurl -T to a file: URL, as a user who may write the file but not its folder")
struct CLIFileUploadTests {
    @Test("The file is written in place, as curl writes it, where no file can be made beside it to rename over it", .enabled(if: getuid() == 0))
    func writableFileInLockedFolder() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-put-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer {
            chmod(folder.path, 0o755)
            try? FileManager.default.removeItem(at: folder)
        }
        let source = folder.appendingPathComponent("source.txt")
        let target = folder.appendingPathComponent("theirs.txt")
        try Data("new contents\n".utf8).write(to: source)
        try Data("old\n".utf8).write(to: target)
        #expect(chown(target.path, 65534, 65534) == 0)
        #expect(chmod(source.path, 0o644) == 0 && chmod(target.path, 0o644) == 0 && chmod(folder.path, 0o555) == 0)

        let run = try await LoadURLProcess.run(["-sS", "-T", source.path, target.absoluteString], user: 65534)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try String(contentsOf: target, encoding: .utf8) == "new contents\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["source.txt", "theirs.txt"])
        var info = stat()
        #expect(stat(target.path, &info) == 0 && info.st_uid == 65534)
    }
}
