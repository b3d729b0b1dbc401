import Foundation
import TestSupport
import Testing

/// `loadurl` against the real FTP server: downloads, listings, uploads, curl's exit statuses.
@Suite("loadurl: ftp against pyftpdlib")
struct CLIFTPTests {
    private func ftp() throws -> TestServers.FTP {
        try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
    }

    @Test("Downloads and a listing in one call, with -i heads")
    func downloadAndList() throws {
        let server = try ftp()
        let base = "ftp://127.0.0.1:\(server.port)"
        let run = try LoadURLProcess.run(["-i", "\(base)/hello.txt", "\(base)/folder/"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Content-Length: 15\r\n"))
        #expect(run.stdout.contains("Hello from FTP\n"))
        #expect(run.stdout.contains("a.txt"))
        #expect(run.stdout.contains("text/plain; charset=utf-8"))
    }

    @Test("-T uploads a file with -u credentials; the server has it byte for byte")
    func upload() throws {
        let server = try ftp()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cli-up-\(UUID().uuidString).txt")
        try Data("uploaded by loadurl\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "cli-\(UUID().uuidString).txt"
        let run = try LoadURLProcess.run(["-u", "user:secret", "-T", file.path, "ftp://127.0.0.1:\(server.port)/upload/\(name)"])
        #expect(run.status == 0, "\(run.stderr)")
        let stored = try Data(contentsOf: URL(fileURLWithPath: server.root + "/upload/" + name))
        #expect(stored == Data("uploaded by loadurl\n".utf8))
    }

    @Test("Exit statuses as curl's: 78 for a missing remote file, 67 for a refused login")
    func exitStatuses() throws {
        let server = try ftp()
        let missing = try LoadURLProcess.run(["ftp://127.0.0.1:\(server.port)/nope.txt"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("ftp://127.0.0.1:\(server.port)/nope.txt"))
        let denied = try LoadURLProcess.run(["ftp://user:wrong@127.0.0.1:\(server.port)/hello.txt"])
        #expect(denied.status == 67)
    }
}
