import Foundation
import TestSupport
import Testing

/// `loadurl -C`: a download goes on from where its file ends (or a given byte), against nginx, pyftpdlib and
/// local files, and a file that cannot be resumed is left as it was.
@Suite("loadurl: -C goes on with a download")
struct CLIContinueAtTests {
    private func nginx() throws -> TestServers.Nginx {
        try #require(TestServers.nginx, "nginx could not be started by scripts/test-servers")
    }

    private func ftp() throws -> TestServers.FTP {
        try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
    }

    /// A file in a folder of its own holding `bytes`, removed with the folder by `cleanUp`.
    private func partialFile(_ bytes: Data) throws -> (path: String, cleanUp: () -> Void) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("continue-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("partial.bin")
        try bytes.write(to: file)
        return (file.path, { try? FileManager.default.removeItem(at: folder) })
    }

    /// Runs `loadurl -C <at> -o <file> <url>` on a file holding `start`, and returns the run and the file after it.
    private func resume(_ url: String, at: String = "-", startingWith start: Data, extra: [String] = []) async throws -> (LoadURLProcess.Result, Data) {
        let (path, cleanUp) = try partialFile(start)
        defer { cleanUp() }
        let run = try await LoadURLProcess.run(extra + ["-sS", "-C", at, "-o", path, url])
        return (run, try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test("http: -C - asks for the rest (206) and appends it: the file ends whole; -C N goes on from byte N")
    func httpResumes() async throws {
        let server = try nginx()
        let whole = try Data(contentsOf: URL(fileURLWithPath: server.root + "/300k.bin"))
        let url = "http://127.0.0.1:\(server.httpPort)/300k.bin"
        let (run, file) = try await resume(url, startingWith: whole.prefix(100_000))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(file == whole)
        let (numbered, fromN) = try await resume(url, at: "123457", startingWith: whole.prefix(123_457))
        #expect(numbered.status == 0, "\(numbered.stderr)")
        #expect(fromN == whole)
    }

    @Test("http: a file already whole (416 of that length) succeeds and is left as it was; one longer than the server's fails with 36")
    func httpWholeAlready() async throws {
        let server = try nginx()
        let whole = try Data(contentsOf: URL(fileURLWithPath: server.root + "/300k.bin"))
        let url = "http://127.0.0.1:\(server.httpPort)/300k.bin"
        let (run, file) = try await resume(url, startingWith: whole)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(file == whole)
        let longer = whole + Data("tail".utf8)
        let (past, kept) = try await resume(url, startingWith: longer)
        #expect(past.status == 36, "\(past.stderr)")
        #expect(past.stderr.contains(url) && past.stderr.contains("300000 bytes on the server"), "\(past.stderr)")
        #expect(kept == longer, "the local file was changed")
    }

    @Test("http: a server that ignores ranges (a whole 200) fails with 33 and leaves the partial file untouched, never appending the whole")
    func httpIgnoresRanges() async throws {
        let server = try nginx()
        let whole = try Data(contentsOf: URL(fileURLWithPath: server.root + "/300k.bin"))
        let url = "http://127.0.0.1:\(server.httpPort)/no-ranges/300k.bin"
        let (run, file) = try await resume(url, startingWith: whole.prefix(100_000))
        #expect(run.status == 33, "\(run.stderr)")
        #expect(run.stderr.contains("does not serve byte ranges") && run.stderr.contains(url), "\(run.stderr)")
        #expect(file == whole.prefix(100_000))
    }

    @Test("http: with -f an error status is still 22, and the partial file is left as it was")
    func httpErrorWithFail() async throws {
        let server = try nginx()
        let start = Data("partial".utf8)
        let (run, file) = try await resume("http://127.0.0.1:\(server.httpPort)/status/404", startingWith: start, extra: ["-f"])
        #expect(run.status == 22, "\(run.stderr)")
        #expect(file == start)
        let (plain, kept) = try await resume("http://127.0.0.1:\(server.httpPort)/status/404", startingWith: start)
        #expect(plain.status == 33, "without -f a 404 is no rest to append: \(plain.stderr)")
        #expect(kept == start)
    }

    @Test("-C - with no file yet downloads the whole; -C with --compressed or an upload is a usage error")
    func noFileAndUsage() async throws {
        let server = try nginx()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("continue-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("new.txt").path
        let run = try await LoadURLProcess.run(["-C", "-", "-o", path, "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "Hello from nginx\n")
        let compressed = try await LoadURLProcess.run(["-C", "-", "--compressed", "-o", path, "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(compressed.status == 2 && compressed.stderr.contains("--compressed"), "\(compressed.stderr)")
        let upload = try await LoadURLProcess.run(["-C", "10", "-T", path, "http://127.0.0.1:\(server.httpPort)/echo"])
        #expect(upload.status == 2, "\(upload.stderr)")
        let bad = try await LoadURLProcess.run(["-C", "x", "-o", path, "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(bad.status == 2 && bad.stderr.contains("-C"), "\(bad.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "Hello from nginx\n", "a refused command line touched the file")
    }

    @Test("file: goes on from the offset; a whole file succeeds untouched; an offset past the end fails with 36")
    func fileResumes() async throws {
        let whole = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let (source, cleanUp) = try partialFile(whole)
        defer { cleanUp() }
        let url = URL(fileURLWithPath: source).absoluteString
        let (run, file) = try await resume(url, startingWith: whole.prefix(77_777))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(file == whole)
        let (done, kept) = try await resume(url, startingWith: whole)
        #expect(done.status == 0, "\(done.stderr)")
        #expect(kept == whole)
        let longer = whole + Data([1, 2, 3])
        let (past, untouched) = try await resume(url, startingWith: longer)
        #expect(past.status == 36, "\(past.stderr)")
        #expect(past.stderr.contains(url), "\(past.stderr)")
        #expect(untouched == longer)
    }

    @Test("ftp: goes on with REST from the offset; a whole file succeeds untouched; an offset past the end fails with 36")
    func ftpResumes() async throws {
        let server = try ftp()
        let whole = try Data(contentsOf: URL(fileURLWithPath: server.root + "/300k.bin"))
        let url = "ftp://127.0.0.1:\(server.port)/300k.bin"
        let (run, file) = try await resume(url, startingWith: whole.prefix(150_001))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(file == whole)
        let (done, kept) = try await resume(url, startingWith: whole)
        #expect(done.status == 0, "\(done.stderr)")
        #expect(kept == whole)
        let longer = whole + Data([9])
        let (past, untouched) = try await resume(url, startingWith: longer)
        #expect(past.status == 36, "\(past.stderr)")
        #expect(untouched == longer)
    }
}
