import Foundation
@testable import LoadURLCommand
import Loader
import FTPScheme
import TestSupport
import Testing

/// `loadurl --retry` against scripts/ws-server.py's `/flaky/ID/N` (503 with `Retry-After: 0` N times, then 200),
/// `/flaky-plain/ID/N` (the same without `Retry-After`) and `/slow/ID/N` (N answers 3 seconds late).
@Suite("loadurl: --retry tries a transfer again after a transient failure")
struct CLIRetryTests {
    private func url(_ kind: String, _ count: Int) throws -> String {
        let port = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers").port
        return "http://127.0.0.1:\(port)/\(kind)/\(UUID().uuidString)/\(count)"
    }

    @Test("503s are tried again until the answer comes; only the last answer is written; out of tries, the 503 is the answer")
    func transientStatus() async throws {
        let recovering = try url("flaky", 2)
        let run = try await LoadURLProcess.run(["-S", "--retry", "3", "-w", " %{http_code}", recovering])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "recovered 200")
        #expect(run.stderr.components(separatedBy: "retrying in 0 s").count == 3, "\(run.stderr)")
        #expect(run.stderr.contains("2 retries left") && run.stderr.contains("1 retry left"), "\(run.stderr)")

        // Fewer tries than the server wants: its last 503 is the response (22 with -f), written once.
        let stubborn = try url("flaky", 5)
        let out = try await LoadURLProcess.run(["-s", "--retry", "1", "-w", " %{http_code}", stubborn])
        #expect(out.status == 0 && out.stdout == "busy 503", "\(out.stderr)")
        let failing = try await LoadURLProcess.run(["-sS", "-f", "--retry", "1", try url("flaky", 5)])
        #expect(failing.status == 22, "\(failing.stderr)")

        // Without --retry, no second try.
        let once = try await LoadURLProcess.run(["-sS", "-w", " %{http_code}", try url("flaky", 1)])
        #expect(once.stdout == "busy 503", "\(once.stderr)")
    }

    @Test("Without Retry-After the first wait is a second; --retry-max-time stops tries that would begin too late")
    func backoffAndMaximumTime() async throws {
        let run = try await LoadURLProcess.run(["-S", "--retry", "2", try url("flaky-plain", 1)])
        #expect(run.status == 0 && run.stdout == "recovered", "\(run.stderr)")
        #expect(run.stderr.contains("retrying in 1 s, 1 retry left"), "\(run.stderr)")
        // The second wait (2 s) would end past 2 s from the start: one retry only, and the 503 stands.
        let bounded = try await LoadURLProcess.run(["-S", "--retry", "5", "--retry-max-time", "2", "-w", " %{http_code}", try url("flaky-plain", 5)])
        #expect(bounded.status == 0 && bounded.stdout == "busy 503", "\(bounded.stderr)")
        #expect(bounded.stderr.components(separatedBy: "retrying in").count == 2, "\(bounded.stderr)")
    }

    @Test("A timeout (-m) is transient; a refused connection only with --retry-connrefused")
    func transientErrors() async throws {
        let late = try url("slow", 1)
        let run = try await LoadURLProcess.run(["-S", "-m", "1", "--retry", "1", "--retry-delay", "1", late])
        #expect(run.status == 0 && run.stdout == "on time", "\(run.stderr)")
        #expect(run.stderr.contains("timed out") && run.stderr.contains("retrying in 1 s"), "\(run.stderr)")

        // A port nobody listens on: taken from the kernel, then given back.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let port = withUnsafeMutablePointer(to: &address) { pointer -> Int in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(listener, $0, length)
                _ = getsockname(listener, $0, &length)
            }
            return Int(UInt16(bigEndian: pointer.pointee.sin_port))
        }
        close(listener)
        let closed = "http://127.0.0.1:\(port)/"
        let plain = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-delay", "1", closed])
        #expect(plain.status == 7 && !plain.stderr.contains("retrying"), "\(plain.stderr)")
        let refused = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-delay", "1", "--retry-connrefused", closed])
        #expect(refused.status == 7 && refused.stderr.contains("retrying in 1 s, 0 retries left"), "\(refused.stderr)")
    }

    @Test("After bytes went to standard output no retry is made; a file output is written again from its start")
    func partialOutput() async throws {
        let ftp = try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
        // The server drops the data connection after about 100 KB of every download.
        let cut = "ftp://127.0.0.1:\(ftp.cutPort)/300k.bin"
        let stdout = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-all-errors", "--retry-delay", "1", cut])
        #expect(stdout.status == 56 && !stdout.stderr.contains("retrying"), "\(stdout.stderr)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-retry-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("300k.bin").path
        let toFile = try await LoadURLProcess.run(["-S", "--retry", "1", "--retry-all-errors", "--retry-delay", "1", "-o", file, cut])
        #expect(toFile.status == 56 && toFile.stderr.contains("retrying in 1 s, 0 retries left"), "\(toFile.stderr)")
        // Written again from its start, not after the first try's bytes: one cut-short try's worth (about 100 kB),
        // not two.
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
        #expect(size >= 100_000 && size < 150_000, "\(size)")
    }

    @Test("Which failures count as transient, and the waits, by curl's rules")
    func policy() {
        let url = URL(string: "ftp://127.0.0.1/x")!
        let plain = RetryPolicy(retries: 3)
        #expect(plain.isTransient(LoadError(.timedOut, url: url)))
        #expect(!plain.isTransient(LoadError(.cannotConnectToHost, url: url)))
        #expect(RetryPolicy(retries: 3, connectionRefused: true).isTransient(LoadError(.cannotConnectToHost, url: url)))
        #expect(!plain.isTransient(LoadError(.fileDoesNotExist, url: url)))
        #expect(RetryPolicy(retries: 3, allErrors: true).isTransient(LoadError(.fileDoesNotExist, url: url)))
        #expect(plain.isTransient(LoadError(.resourceUnavailable, url: url, underlying: FTPReply(code: 450, text: "450 busy"))))
        #expect(!plain.isTransient(LoadError(.fileDoesNotExist, url: url, underlying: FTPReply(code: 550, text: "550 no such file"))))
        #expect(RetryPolicy.transientStatuses == [408, 429, 500, 502, 503, 504])

        #expect((1...12).map { plain.delay(beforeRetry: $0) } == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600])
        #expect(RetryPolicy(retries: 3, fixedDelay: 5).delay(beforeRetry: 3) == 5)
        #expect(plain.delay(beforeRetry: 1, retryAfter: " 7 ") == 7)
        let now = Date(timeIntervalSince1970: 1_000_000_000)
        #expect(plain.delay(beforeRetry: 1, retryAfter: "Sun, 09 Sep 2001 01:51:40 GMT", now: now) == 300)
        #expect(plain.delay(beforeRetry: 2, retryAfter: "soon") == 2)
        #expect(plain.allows(retry: 3, elapsed: 100, wait: 5) && !plain.allows(retry: 4, elapsed: 0, wait: 0))
        #expect(!RetryPolicy(retries: 3, maximumTime: 10).allows(retry: 1, elapsed: 6, wait: 5))
    }
}
