import Foundation
import TestSupport
import Testing

/// `loadurl -C`: a download goes on from where its file ends (or a given byte), against nginx, pyftpdlib and
/// local files, and a file that cannot be resumed is left as it was.
@Suite("loadurl: -C goes on with a download")
struct CLIContinueAtTests {
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

    /// `count` bytes unlike any file the servers hold (`#`): a resumed download keeps them and appends the rest,
    /// where one that loaded the whole again would not.
    private func marked(_ count: Int) -> Data { Data(repeating: UInt8(ascii: "#"), count: count) }

    @Test("http: -C - asks for the rest (206) and appends it after the bytes already there; -C N goes on from byte N")
    func httpResumes() async throws {
        let server = try TestServers.requireNginx()
        let whole = try Data(contentsOf: URL(fileURLWithPath: server.root + "/300k.bin"))
        let url = "http://127.0.0.1:\(server.httpPort)/300k.bin"
        let (run, file) = try await resume(url, startingWith: marked(100_000), extra: ["-w", "%{http_code} %{size_download}"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "206 200000")
        #expect(file == marked(100_000) + whole.dropFirst(100_000))
        let (numbered, fromN) = try await resume(url, at: "123457", startingWith: marked(123_457))
        #expect(numbered.status == 0, "\(numbered.stderr)")
        #expect(fromN == marked(123_457) + whole.dropFirst(123_457))
    }

    @Test("-C N with a file of another size is refused (33) and the file left: the rest would repeat or skip bytes")
    func offsetAgainstFile() async throws {
        let server = try TestServers.requireNginx()
        let (run, file) = try await resume("http://127.0.0.1:\(server.httpPort)/300k.bin", at: "100", startingWith: marked(400))
        #expect(run.status == 33, "\(run.stderr)")
        #expect(run.stderr.contains("holds 400 bytes, not 100"), "\(run.stderr)")
        #expect(file == marked(400))
    }

    @Test("http: a file already whole (416 of that length) succeeds and is left as it was; one longer than the server's fails with 36")
    func httpWholeAlready() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/300k.bin"
        let (run, file) = try await resume(url, startingWith: marked(300_000), extra: ["-w", "%{http_code}"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "416")
        #expect(file == marked(300_000), "a whole file was written to")
        let (past, kept) = try await resume(url, startingWith: marked(300_004))
        #expect(past.status == 36, "\(past.stderr)")
        #expect(past.stderr.contains(url) && past.stderr.contains("300000 bytes"), "\(past.stderr)")
        #expect(kept == marked(300_004), "the local file was changed")
    }

    @Test("http: a server that ignores ranges (a whole 200) fails with 33 and leaves the partial file untouched, never appending the whole")
    func httpIgnoresRanges() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/no-ranges/300k.bin"
        let (run, file) = try await resume(url, startingWith: marked(100_000))
        #expect(run.status == 33, "\(run.stderr)")
        #expect(run.stderr.contains("does not serve byte ranges") && run.stderr.contains(url), "\(run.stderr)")
        #expect(file == marked(100_000))
    }

    @Test("http: a file changed on the server since the partial file was written (412) is not spliced: 33, file left")
    func httpChangedSince() async throws {
        let server = try TestServers.requireNginx()
        let (path, cleanUp) = try partialFile(marked(100_000))
        defer { cleanUp() }
        // The partial file as written long before the server's copy was last changed.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)], ofItemAtPath: path)
        let run = try await LoadURLProcess.run(["-sS", "-C", "-", "-o", path, "http://127.0.0.1:\(server.httpPort)/300k.bin"])
        #expect(run.status == 33, "\(run.stderr)")
        #expect(run.stderr.contains("changed on the server"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == marked(100_000))
        // Declined as curl declines a field: the rest is appended without the condition.
        let declined = try await LoadURLProcess.run(["-sS", "-H", "If-Unmodified-Since:", "-C", "-", "-o", path,
                                                     "http://127.0.0.1:\(server.httpPort)/300k.bin"])
        #expect(declined.status == 0, "\(declined.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 300_000)
    }

    @Test("http: with -f an error status is still 22, and the partial file is left as it was")
    func httpErrorWithFail() async throws {
        let server = try TestServers.requireNginx()
        let start = Data("partial".utf8)
        let (run, file) = try await resume("http://127.0.0.1:\(server.httpPort)/status/404", startingWith: start, extra: ["-f"])
        #expect(run.status == 22, "\(run.stderr)")
        #expect(file == start)
        let (plain, kept) = try await resume("http://127.0.0.1:\(server.httpPort)/status/404", startingWith: start)
        #expect(plain.status == 33, "without -f a 404 is no rest to append: \(plain.stderr)")
        #expect(kept == start)
    }

    @Test("-C - with no file yet downloads the whole; -C with --compressed, -i, -I or an upload is a usage error")
    func noFileAndUsage() async throws {
        let server = try TestServers.requireNginx()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("continue-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("new.txt").path
        let url = "http://127.0.0.1:\(server.httpPort)/hello.txt"
        let run = try await LoadURLProcess.run(["-C", "-", "-o", path, url])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "Hello from nginx\n")
        for extra in [["--compressed"], ["-i"], ["-I"], ["-T", path]] {
            let refused = try await LoadURLProcess.run(["-C", "-"] + extra + ["-o", path, url])
            #expect(refused.status == 2 && refused.stderr.contains("-C"), "\(extra): \(refused.stderr)")
        }
        let bad = try await LoadURLProcess.run(["-C", "x", "-o", path, url])
        #expect(bad.status == 2 && bad.stderr.contains("-C"), "\(bad.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "Hello from nginx\n", "a refused command line touched the file")
    }

    @Test("file: goes on from the offset; a whole file succeeds untouched; an offset past the end fails with 36")
    func fileResumes() async throws {
        let whole = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let (source, cleanUp) = try partialFile(whole)
        defer { cleanUp() }
        let url = URL(fileURLWithPath: source).absoluteString
        let (run, file) = try await resume(url, startingWith: marked(77_777))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(file == marked(77_777) + whole.dropFirst(77_777))
        let (done, kept) = try await resume(url, startingWith: marked(200_000))
        #expect(done.status == 0, "\(done.stderr)")
        #expect(kept == marked(200_000))
        let (past, untouched) = try await resume(url, startingWith: marked(200_003))
        #expect(past.status == 36, "\(past.stderr)")
        #expect(past.stderr.contains(url), "\(past.stderr)")
        #expect(untouched == marked(200_003))
        // A missing file is that error (37), not a resume's, and the output is left.
        let missing = try await resume(url + "-missing", startingWith: marked(10))
        #expect(missing.0.status == 37, "\(missing.0.stderr)")
        #expect(missing.1 == marked(10))
    }

    @Test("ftp: goes on with REST from the offset; a whole file succeeds untouched; an offset past the end fails with 36")
    func ftpResumes() async throws {
        let server = try ftp()
        let whole = try Data(contentsOf: URL(fileURLWithPath: server.root + "/300k.bin"))
        let url = "ftp://127.0.0.1:\(server.port)/300k.bin"
        let (run, file) = try await resume(url, startingWith: marked(150_001))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(file == marked(150_001) + whole.dropFirst(150_001))
        let (done, kept) = try await resume(url, startingWith: marked(300_000))
        #expect(done.status == 0, "\(done.stderr)")
        #expect(kept == marked(300_000))
        let (past, untouched) = try await resume(url, startingWith: marked(300_001))
        #expect(past.status == 36, "\(past.stderr)")
        #expect(untouched == marked(300_001))
    }
}
