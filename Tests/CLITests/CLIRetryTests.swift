import Foundation
@testable import LoadURLCommand
import Loader
import FTPScheme
import TestSupport
import Testing

/// `loadurl --retry` against scripts/ws-server.py's `/flaky/ID/N` (503 with `Retry-After: 2` N times, then 200),
/// `/flaky-plain/ID/N` (the same without `Retry-After`) and `/slow/ID/N` (N answers 3 seconds late).
@Suite("loadurl: --retry tries a transfer again after a transient failure")
struct CLIRetryTests {
    private func url(_ kind: String, _ count: Int) throws -> String {
        let port = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers").port
        return "http://127.0.0.1:\(port)/\(kind)/\(UUID().uuidString)/\(count)"
    }

    @Test("503s are tried again, a second and then two apart, until the answer comes; only the last answer is written; out of tries, the 503 is the answer")
    func transientStatus() async throws {
        let run = try await LoadURLProcess.run(["-S", "--retry", "3", "-w", " %{http_code}", try url("flaky-plain", 2)])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "recovered 200")
        #expect(run.stderr.contains("retrying in 1 s, 2 retries left") && run.stderr.contains("retrying in 2 s, 1 retry left"), "\(run.stderr)")
        #expect(run.stderr.components(separatedBy: "retrying in").count == 3, "\(run.stderr)")

        // Fewer tries than the server wants: its last 503 is the response (22 with -f), written once.
        let out = try await LoadURLProcess.run(["-s", "--retry", "1", "-w", " %{http_code}", try url("flaky-plain", 5)])
        #expect(out.status == 0 && out.stdout == "busy 503", "\(out.stderr)")
        let failing = try await LoadURLProcess.run(["-sS", "-f", "--retry", "1", try url("flaky-plain", 5)])
        #expect(failing.status == 22, "\(failing.stderr)")

        // Without --retry, no second try.
        let once = try await LoadURLProcess.run(["-sS", "-w", " %{http_code}", try url("flaky-plain", 1)])
        #expect(once.stdout == "busy 503", "\(once.stderr)")
    }

    @Test("A Retry-After longer than the backoff is waited; --retry-max-time stops tries that would begin too late")
    func retryAfterAndMaximumTime() async throws {
        let run = try await LoadURLProcess.run(["-S", "--retry", "2", try url("flaky", 1)])
        #expect(run.status == 0 && run.stdout == "recovered", "\(run.stderr)")
        #expect(run.stderr.contains("retrying in 2 s, 1 retry left"), "\(run.stderr)")
        // The first wait (1 s) ends within 3 s of the start, the second (2 s) would not: one retry, and the 503 stands.
        let bounded = try await LoadURLProcess.run(["-S", "--retry", "5", "--retry-max-time", "3", "-w", " %{http_code}", try url("flaky-plain", 5)])
        #expect(bounded.status == 0 && bounded.stdout == "busy 503", "\(bounded.stderr)")
        #expect(bounded.stderr.components(separatedBy: "retrying in").count == 2, "\(bounded.stderr)")
    }

    @Test("With -f and --retry-all-errors a 404 is tried again too; with -Z each transfer retries on its own and the output keeps its order")
    func allErrorsAndParallel() async throws {
        let nginx = try TestServers.requireNginx()
        let missing = "http://127.0.0.1:\(nginx.httpPort)/nope"
        let run = try await LoadURLProcess.run(["-S", "-f", "--retry", "1", "--retry-all-errors", "--retry-delay", "1", missing])
        #expect(run.status == 22 && run.stderr.contains("HTTP 404") && run.stderr.contains("0 retries left"), "\(run.stderr)")
        let parallel = try await LoadURLProcess.run(["-sS", "-Z", "--retry", "2", "data:,a", try url("flaky-plain", 1), "data:,b", try url("flaky-plain", 1)])
        #expect(parallel.status == 0 && parallel.stdout == "arecoveredbrecovered", "\(parallel.stderr)")
    }

    @Test("With -C a 503 is tried again before the rest is judged; the partial file is left as it was")
    func continueAt() async throws {
        let partial = try TempFile("rec", name: "partial.txt")
        // The test server ignores ranges: after the retry its whole 200 is no rest to append (33).
        let run = try await LoadURLProcess.run(["-S", "-C", "-", "--retry", "1", "-o", partial.url.path, try url("flaky-plain", 1)])
        #expect(run.status == 33 && run.stderr.contains("retrying in 1 s"), "\(run.stderr)")
        #expect(try Data(contentsOf: partial.url) == Data("rec".utf8))
    }

    @Test("A timeout (-m) is transient; a refused connection only with --retry-connrefused")
    func transientErrors() async throws {
        let late = try url("slow", 1)
        let run = try await LoadURLProcess.run(["-S", "-m", "1", "--retry", "1", "--retry-delay", "1", late])
        #expect(run.status == 0 && run.stdout == "on time", "\(run.stderr)")
        #expect(run.stderr.contains("timed out") && run.stderr.contains("retrying in 1 s"), "\(run.stderr)")

        let port = LoopbackPorts.closed()
        let closed = "http://127.0.0.1:\(port)/"
        let plain = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-delay", "1", closed])
        #expect(plain.status == 7 && !plain.stderr.contains("retrying"), "\(plain.stderr)")
        let refused = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-delay", "1", "--retry-connrefused", closed])
        #expect(refused.status == 7 && refused.stderr.contains("retrying in 1 s, 0 retries left"), "\(refused.stderr)")
    }

    @Test("A file that no try opened keeps what it held: tries refused, or 503s under -f, leave it as curl does; -C on a missing file retries rather than failing to cut it back")
    func untouchedOutputKept() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retry-keep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("out.txt")
        let closed = "http://127.0.0.1:\(LoopbackPorts.closed())/"

        try Data("keep\n".utf8).write(to: file)
        let refused = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-delay", "1", "--retry-connrefused", "-o", file.path, closed])
        #expect(refused.status == 7 && refused.stderr.contains("retrying"), "\(refused.stderr)")
        #expect(try String(contentsOf: file, encoding: .utf8) == "keep\n", "emptied by a retry that wrote nothing")

        let failing = try await LoadURLProcess.run(["-sSf", "--retry", "1", "--retry-delay", "1", "-o", file.path, try url("flaky-plain", 5)])
        #expect(failing.status == 22, "\(failing.stderr)")
        #expect(try String(contentsOf: file, encoding: .utf8) == "keep\n", "emptied by a 503 tried again")

        // A head, then the connection closed before any byte of the body: no try opened the file (the first byte opens it).
        let webSockets = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
        let headOnly = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-all-errors", "--retry-delay", "1", "-o", file.path,
                                                     "http://127.0.0.1:\(webSockets.port)/head-then-close"])
        #expect(headOnly.status == 18 && headOnly.stderr.contains("retrying"), "\(headOnly.status): \(headOnly.stderr)")
        #expect(try String(contentsOf: file, encoding: .utf8) == "keep\n", "emptied by a retry after a head without a body")

        let missing = folder.appendingPathComponent("new.bin")
        let resumed = try await LoadURLProcess.run(["-S", "-C", "5", "--retry", "1", "--retry-delay", "1", "--retry-connrefused", "-o", missing.path, closed])
        #expect(resumed.status == 7 && resumed.stderr.contains("retrying"), "\(resumed.status): \(resumed.stderr)")
    }

    @Test("An FTP server's 450 (busy) is tried again; its 550 (no such file) is not")
    func ftpReplies() async throws {
        let ftp = try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
        let busy = "ftp://127.0.0.1:\(ftp.port)/busy-1-\(UUID().uuidString).txt"
        let run = try await LoadURLProcess.run(["-S", "--retry", "2", "--retry-delay", "1", busy])
        #expect(run.status == 0 && run.stdout == "Hello from FTP\n", "\(run.stderr)")
        #expect(run.stderr.contains("450") && run.stderr.contains("retrying in 1 s, 1 retry left"), "\(run.stderr)")
        let missing = try await LoadURLProcess.run(["-S", "--retry", "2", "--retry-delay", "1", "ftp://127.0.0.1:\(ftp.port)/nope.txt"])
        #expect(missing.status == 78 && !missing.stderr.contains("retrying"), "\(missing.stderr)")
    }

    @Test("After bytes went to standard output no retry is made; a file output is written again from its start")
    func partialOutput() async throws {
        let ftp = try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
        // The server drops the data connection after about 100 KB of every download.
        let cut = "ftp://127.0.0.1:\(ftp.cutPort)/300k.bin"
        let stdout = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-all-errors", "--retry-delay", "1", cut])
        // Cut short: curl's 18 (a partial file), as curl exits on this server.
        #expect(stdout.status == 18 && !stdout.stderr.contains("retrying"), "\(stdout.stderr)")
        try await withTemporaryFolder("cli-retry") { folder in
            let file = folder.appendingPathComponent("300k.bin").path
            let toFile = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-all-errors", "--retry-delay", "1", "-o", file, cut])
            #expect(toFile.status == 18 && toFile.stderr.contains("retrying in 1 s, 0 retries left"), "\(toFile.stderr)")
            // Written again from its start, not after the first try's bytes: one cut-short try's worth (about 100 kB),
            // not two.
            let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
            #expect(size >= 100_000 && size < 150_000, "\(size)")
        }
    }

    @Test("A retry takes back only what its try wrote: --no-clobber's NAME.1, written again, never the kept file; an output that cannot be cut back (a pipe) fails the transfer (23) rather than take the bytes twice; /dev/null is fine")
    func retryTakesBackItsOwn() async throws {
        let ftp = try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
        // The server drops the data connection after about 100 KB of every download.
        let cut = "ftp://127.0.0.1:\(ftp.cutPort)/300k.bin"
        let retrying = ["-S", "--retry", "1", "--retry-all-errors", "--retry-delay", "1"]
        try await withTemporaryFolder("cli-retry-own") { folder in
            let kept = folder.appendingPathComponent("report.bin").path
            try Data("keep\n".utf8).write(to: URL(fileURLWithPath: kept))
            let run = try await LoadURLProcess.run(retrying + ["--no-clobber", "-o", kept, cut])
            #expect(run.status == 18 && run.stderr.contains("retrying"), "\(run.status): \(run.stderr)")
            // It emptied the kept file, and the second try went to report.bin.2.
            #expect(try String(contentsOfFile: kept, encoding: .utf8) == "keep\n", "the file --no-clobber keeps was written")
            let size = try FileManager.default.attributesOfItem(atPath: kept + ".1")[.size] as? Int ?? 0
            #expect(size >= 100_000 && size < 150_000, "report.bin.1 holds \(size) bytes: not one try's")
            #expect(!FileManager.default.fileExists(atPath: kept + ".2"), "the retry made a file of its own")
        }
        // Standard output is a pipe here: the first try's bytes cannot be taken back (the retry's appended to them).
        let piped = try await LoadURLProcess.run(retrying + ["-o", "/dev/stdout", cut])
        #expect(piped.status == 23 && piped.stderr.contains("cannot take back what the try wrote to /dev/stdout"), "\(piped.status): \(piped.stderr)")
        // Read as text, each byte that is not UTF-8 is one replacement character: at most as many characters as bytes.
        #expect(piped.stdout.unicodeScalars.count < 150_000, "\(piped.stdout.unicodeScalars.count) characters: the bytes came twice")
        let discarded = try await LoadURLProcess.run(retrying + ["-o", "/dev/null", cut])
        #expect(discarded.status == 18 && discarded.stderr.contains("0 retries left"), "\(discarded.status): \(discarded.stderr)")
    }

    @Test("Which failures count as transient, and the waits, by curl's rules")
    func policy() {
        let url = URL(string: "ftp://127.0.0.1/x")!
        let plain = RetryPolicy(retries: 3)
        #expect(plain.isTransient(LoadError(.timedOut, url: url)))
        #expect(plain.isTransient(LoadError(.cannotFindHost, url: url)))
        let refused = LoadError(.cannotConnectToHost, url: url, reason: "cannot connect", underlying: POSIXError(.ECONNREFUSED))
        #expect(!plain.isTransient(refused))
        #expect(RetryPolicy(retries: 3, connectionRefused: true).isTransient(refused))
        // A host out of reach, or a proxy's refusal of the tunnel, is no refused connection, whatever the words.
        let unreachable = LoadError(.cannotConnectToHost, url: url, reason: "Connection refused", underlying: POSIXError(.EHOSTUNREACH))
        #expect(!RetryPolicy(retries: 3, connectionRefused: true).isTransient(unreachable))
        let tunnel = LoadError(.cannotConnectToHost, url: url, reason: "the proxy 127.0.0.1:3128 refused the tunnel: 403 Connection refused")
        #expect(!RetryPolicy(retries: 3, connectionRefused: true).isTransient(tunnel))
        #expect(!plain.isTransient(LoadError(.fileDoesNotExist, url: url)))
        #expect(RetryPolicy(retries: 3, allErrors: true).isTransient(LoadError(.fileDoesNotExist, url: url)))
        #expect(plain.isTransient(LoadError(.resourceUnavailable, url: url, underlying: FTPReply(code: 450, text: "450 busy"))))
        #expect(!plain.isTransient(LoadError(.fileDoesNotExist, url: url, underlying: FTPReply(code: 550, text: "550 no such file"))))
        #expect([408, 429, 500, 502, 503, 504].allSatisfy(RetryPolicy.isTransient(status:)))
        #expect(![200, 304, 400, 404, 501, 505].contains(where: RetryPolicy.isTransient(status:)))
        #expect(RetryPolicy(retries: 1, allErrors: true).retries(status: 404, failsOnHTTPError: true))
        #expect(!RetryPolicy(retries: 1, allErrors: true).retries(status: 404, failsOnHTTPError: false))
        #expect(!plain.retries(status: 404, failsOnHTTPError: true) && plain.retries(status: 503, failsOnHTTPError: false))

        #expect((1...12).map { plain.delay(beforeRetry: $0) } == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600])
        #expect(RetryPolicy(retries: 3, fixedDelay: 5).delay(beforeRetry: 3) == 5)
        // Retry-After when it asks for longer than the wait would be, never beyond ten minutes.
        #expect(plain.delay(beforeRetry: 1, retryAfter: " 7 ") == 7)
        #expect(plain.delay(beforeRetry: 4, retryAfter: "0") == 8)
        #expect(RetryPolicy(retries: 3, fixedDelay: 5).delay(beforeRetry: 1, retryAfter: "3") == 5)
        #expect(plain.delay(beforeRetry: 1, retryAfter: "99999999") == 600)
        let now = Date(timeIntervalSince1970: 1_000_000_000)
        #expect(plain.delay(beforeRetry: 1, retryAfter: "Sun, 09 Sep 2001 01:51:40 GMT", now: now) == 300)
        #expect(plain.delay(beforeRetry: 2, retryAfter: "Sun, 09 Sep 2001 01:40:00 GMT", now: now) == 2)
        #expect(plain.delay(beforeRetry: 2, retryAfter: "soon") == 2)
        #expect(plain.allows(retry: 3, elapsed: 100, wait: 5) && !plain.allows(retry: 4, elapsed: 0, wait: 0))
        #expect(!RetryPolicy(retries: 3, maximumTime: 10).allows(retry: 1, elapsed: 6, wait: 5))
    }
}
