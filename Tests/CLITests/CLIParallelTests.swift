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
        let nginx = try TestServers.requireNginx()
        let hello = "http://127.0.0.1:\(nginx.httpPort)/hello.txt"
        let run = try await LoadURLProcess.run(["-sS", "-Z", "-w", "[%{http_code}]", "data:,first", url, hello, url, url, "data:,last"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "first[000]together[200]Hello from nginx\n[200]together[200]together[200]last[000]")
    }

    @Test("With -y, -Z opens as many connections to one host as transfers run at once (curl has no limit per host), past the pool's eight, so that none waits for one with its -y time running")
    func manyToOneHost() async throws {
        let url = try barrier(12)
        let run = try await LoadURLProcess.run(["-sS", "-Z", "-y", "30", "--parallel-max", "12", "-w", "%{http_code} "] + Array(repeating: url, count: 12))
        #expect(run.status == 0 && run.stdout == String(repeating: "together200 ", count: 12), "\(run.stdout) \(run.stderr)")
    }

    @Test("With --next, -Z runs every operation's transfers together, each with its own options, output in the order of the URLs; the status is the last failure's")
    func acrossOperations() async throws {
        let url = try barrier(3)
        let nginx = try TestServers.requireNginx()
        let missing = "http://127.0.0.1:\(nginx.httpPort)/nope"
        // Three operations, each with a URL at the barrier: one after another, each would wait there alone.
        let run = try await LoadURLProcess.run(["-sS", "-Z", "-w", "[%{http_code}]", "data:,first", url, "--next", "-f", missing, url,
                                                "--next", "-w", "<%{http_code}>", url, "data:,last"])
        #expect(run.status == 22, "\(run.stderr)")
        // -w is the operation's: the second has none.
        #expect(run.stdout == "first[000]together[200]togethertogether<200>last<000>", "\(run.stdout)")
        #expect(run.stderr.contains(missing), "\(run.stderr)")
        // --parallel-max holds for them all: two at the barrier for two, the third alone.
        let pair = try barrier(2)
        let bounded = try await LoadURLProcess.run(["-sS", "-Z", "--parallel-max", "2", "-w", "%{http_code} ", pair, "--next", "-w", "%{http_code} ", pair,
                                                    "--next", "-w", "%{http_code} ", pair])
        #expect(bounded.stdout == "together200 together200 alone503 ", "\(bounded.stdout)")
        // The last --parallel-max anywhere holds for all, as curl's global option: 3 here, so all three meet.
        let three = try barrier(3)
        let last = try await LoadURLProcess.run(["-sS", "-Z", "--parallel-max", "1", "-w", "%{http_code} ", three, "--next", "-w", "%{http_code} ", three,
                                                 "--next", "--parallel-max", "3", "-w", "%{http_code} ", three])
        #expect(last.stdout == "together200 together200 together200 ", "\(last.stdout)")
        // -D - in any operation cannot go with -Z across them.
        let dump = try await LoadURLProcess.run(["-Z", "data:,a", "--next", "-D", "-", "data:,b"])
        #expect(dump.status == 2 && dump.stderr.contains("-D -"), "\(dump.stderr)")
    }

    @Test("--parallel-max bounds how many run at once: two meet at a barrier for two, the third comes alone")
    func bounded() async throws {
        let url = try barrier(2)
        let run = try await LoadURLProcess.run(["-sS", "-Z", "--parallel-max", "2", "-w", "%{http_code} ", url, url, url])
        #expect(run.status == 0, "\(run.stderr)")
        // One at a time: all three alone; three at once: all three together.
        #expect(run.stdout == "together200 together200 alone503 ")
        // 0 is curl 7.88's default (50), as scripts written for curl pass it; a negative number is a usage error.
        let zero = try await LoadURLProcess.run(["-Z", "--parallel-max", "0", "data:,x", "data:,y"])
        #expect(zero.status == 0 && zero.stdout == "xy", "\(zero.stderr)")
        let negative = try await LoadURLProcess.run(["-Z", "--parallel-max", "-1", "data:,x"])
        #expect(negative.status == 2 && negative.stderr.contains("--parallel-max"), "\(negative.stderr)")
    }

    @Test("Each failure is reported naming its URL; the exit status is the last failure's in the order of the URLs")
    func failures() async throws {
        let nginx = try TestServers.requireNginx()
        let missing = "http://127.0.0.1:\(nginx.httpPort)/nope"
        // The 404 comes last in time, the missing file last among the URLs.
        let run = try await LoadURLProcess.run(["-sS", "-Z", "-f", "data:,a", missing, "file:///nonexistent/x", "data:,b"])
        #expect(run.status == 37, "\(run.stderr)")
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
        // Parked before the transfers ahead of it finish.
        #expect(await eventually { output.isWaiting(3) })
        #expect(!output.isTurn(3))
        output.finish(0, with: "zero ")
        await third.value
        output.finish(4, with: "four")
        #expect(written.withLock { $0.joined() } == "zero two three's body three four")
    }

    @Test("Bodies waiting for their turn are kept aside, not held back: eight large ones behind a redirect do not keep the connection it needs")
    func spooledBehindARedirect() async throws {
        let nginx = try TestServers.requireNginx()
        let origin = "http://127.0.0.1:\(nginx.httpPort)"
        try await withTemporaryFolder("cli-parallel") { folder in
            let output = folder.appendingPathComponent("out.bin")
            // The redirect's second request queues behind the eight (as many as the pool's connections to the host):
            // held back at the 2 MiB body buffer, they would keep every connection until -m ran out.
            let big = Array(repeating: origin + "/4m.bin", count: 8)
            let run = try await LoadURLProcess.run(["-sS", "-Z", "-L", "-m", "60", origin + "/redirect"] + big, output: output, timeout: 90)
            #expect(run.status == 0, "\(run.stderr)")
            let size = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int
            #expect(size == "Hello from nginx\n".utf8.count + 8 * 4 * 1024 * 1024)
            let head = try FileHandle(forReadingFrom: output)
            defer { try? head.close() }
            #expect(try head.read(upToCount: 17) == Data("Hello from nginx\n".utf8))
        }
    }

    @Test("A spool keeps bytes in memory, then in a file, and gives them back in order")
    func spool() async throws {
        try await withTemporaryFolder("cli-spool") { folder in
            let url = URL(string: "http://127.0.0.1/spooled")!
            let spool = SpooledOutput(url: url, directory: folder.path)
            // Past the memory limit in pieces of several sizes, each byte telling its place.
            var expected = Data()
            for size in [1, 1000, SpooledOutput.memoryLimit - 1001, 300_000, 5, 2_000_000] {
                let piece = Data((0..<size).map { UInt8(truncatingIfNeeded: (expected.count + $0) &* 7) })
                expected.append(piece)
                try spool.write(piece)
            }
            // The file it keeps has no name in the folder.
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
            let path = folder.appendingPathComponent("out.bin").path
            let output = try OutputFile(path: path, createDirectories: false, url: url)
            try spool.drain(into: output)
            try output.finish()
            #expect(FileManager.default.contents(atPath: path) == expected)
        }
    }
}
