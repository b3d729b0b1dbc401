import Foundation
import Loader
@testable import LoadURLCommand
import TestSupport
import Testing

/// `loadurl -Z`: transfers at once. That they overlap is shown by scripts/ws-server.py's `/barrier/ID/N`, which
/// answers 200 only to requests that wait there together (503 to one left alone for 5 seconds).
@Suite("loadurl: -Z runs the transfers at once")
struct CLIParallelTests {
    /// A new barrier for `count` requests.
    private func barrier(_ count: Int) throws -> String {
        let port = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers").port
        return "http://127.0.0.1:\(port)/barrier/\(UUID().uuidString)/\(count)"
    }

    @Test("Transfers run together; standard output still has each body and -w line whole, in the order of the URLs")
    func together() async throws {
        let url = try barrier(3)
        let nginx = try #require(TestServers.nginx, "nginx could not be started by scripts/test-servers")
        let hello = "http://127.0.0.1:\(nginx.httpPort)/hello.txt"
        let run = try await LoadURLProcess.run(["-sS", "-Z", "-w", "[%{http_code}]", "data:,first", url, hello, url, url, "data:,last"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "first[000]together[200]Hello from nginx\n[200]together[200]together[200]last[000]")
    }

    @Test("--parallel-max bounds how many run at once: two cannot meet a barrier for three")
    func bounded() async throws {
        let url = try barrier(3)
        let run = try await LoadURLProcess.run(["-sS", "-Z", "--parallel-max", "2", "-w", "%{http_code} ", url, url, url])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "alone503 alone503 alone503 ")
        let zero = try await LoadURLProcess.run(["-Z", "--parallel-max", "0", "data:,x"])
        #expect(zero.status == 2 && zero.stderr.contains("--parallel-max"), "\(zero.stderr)")
        let input = try await LoadURLProcess.run(["-Z", "-T", "-", "file:///tmp/a", "file:///tmp/b"], input: Data("x".utf8))
        #expect(input.status == 2 && input.stderr.contains("-T -"), "\(input.stderr)")
    }

    @Test("Each failure is reported naming its URL; the exit status is the last failure's in the order of the URLs")
    func failures() async throws {
        let nginx = try #require(TestServers.nginx, "nginx could not be started by scripts/test-servers")
        let missing = "http://127.0.0.1:\(nginx.httpPort)/nope"
        let run = try await LoadURLProcess.run(["-sS", "-Z", "-f", "data:,a", "file:///nonexistent/x", missing, "data:,b"])
        #expect(run.status == 22, "\(run.stderr)")
        #expect(run.stdout == "ab")
        #expect(run.stderr.contains("file:///nonexistent/x") && run.stderr.contains(missing), "\(run.stderr)")
    }

    @Test("Ordered output: lines of transfers that finish early wait for the earlier ones; a turn waits for every earlier part")
    func orderedOutput() async throws {
        let written = Locked<[String]>([])
        let output = OrderedOutput { text in written.withLock { $0.append(text) } }
        output.finish(2, with: "two ")
        output.finish(1, with: "")
        #expect(written.withLock { $0 }.isEmpty)
        let third = Task {
            await output.turn(3)
            written.withLock { $0.append("three's body ") }
            output.finish(3, with: "three ")
        }
        output.finish(0, with: "zero ")
        await third.value
        output.finish(4, with: "four")
        #expect(written.withLock { $0.joined() } == "zero two three's body three four")
    }
}
