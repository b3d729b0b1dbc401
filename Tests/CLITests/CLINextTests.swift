import Foundation
import LoadURLCommand
import TestSupport
import Testing

/// `loadurl`'s `--next` (`-:`), which divides a command line into operations with options of their own, against
/// nginx: `/echo` answers the method and body length it got, `/cookies/login` sets two cookies and redirects to
/// `/cookies/show`, which answers the `Cookie` field it got.
@Suite("loadurl: --next divides the command line into operations")
struct CLINextTests {
    private func base() throws -> String {
        "http://127.0.0.1:\(try TestServers.requireNginx().httpPort)"
    }

    @Test("An operation's options hold for its own URLs only: a POST, then a GET of the same URL, -f for the first alone")
    func optionsPerOperation() async throws {
        let base = try base()
        let run = try await LoadURLProcess.run(["-sS", "-d", "posted", "\(base)/echo", "--next", "\(base)/echo", "-:", "-f", "\(base)/hello.txt"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "method=POST length=6 body=method=GET length= body=Hello from nginx\n", "\(run.stdout)")
        // -f in the first operation only: the second's 404 is a body, and the status is the last failure's (22).
        let failing = try await LoadURLProcess.run(["-sS", "-f", "\(base)/status/404", "--next", "\(base)/status/404"])
        #expect(failing.status == 22, "\(failing.stderr)")
        #expect(failing.stdout == "not here\n")
        #expect(failing.stderr.contains("404"), "\(failing.stderr)")
    }

    @Test("Global options (-v, -s, -S) hold for every operation, wherever they stand")
    func globalOptionsCarry() async throws {
        let base = try base()
        let run = try await LoadURLProcess.run(["-sSv", "\(base)/hello.txt", "--next", "\(base)/echo"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("> GET /hello.txt HTTP/1.1") && run.stderr.contains("> GET /echo HTTP/1.1"), "\(run.stderr)")
        let closed = "http://127.0.0.1:\(LoopbackPorts.closed())/"
        let quiet = try await LoadURLProcess.run(["-s", "\(base)/hello.txt", "--next", closed])
        #expect(quiet.status == 7 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        // Given after --next, -s quiets the operation before it too, as curl's does.
        let quietBefore = try await LoadURLProcess.run([closed, "--next", "-s", "\(base)/hello.txt"])
        #expect(quietBefore.status == 7 && quietBefore.stderr.isEmpty && quietBefore.stdout == "Hello from nginx\n", "\(quietBefore.stderr)")
    }

    @Test("Operations share one cookie jar, used by those that turn it on (-b '' or -c), as curl's share theirs")
    func sharedCookies() async throws {
        let base = try base()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-next-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let jar = folder.appendingPathComponent("jar.txt").path
        let run = try await LoadURLProcess.run([
            "-sS", "-L", "-c", jar, "\(base)/cookies/login", "--next", "\(base)/cookies/show", "--next", "-b", "", "\(base)/cookies/show",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "cookie=theme=dark; session=s3cr3t\ncookie=\ncookie=theme=dark; session=s3cr3t\n", "\(run.stdout)")
        #expect(try String(contentsOfFile: jar, encoding: .utf8).contains("s3cr3t"))
    }

    @Test("An operation without a URL is a usage error (2) before anything runs; an option's value is never taken for --next")
    func usage() async throws {
        // An operation's options that cannot go together stop the whole command before its first operation runs.
        let clash = try await LoadURLProcess.run(["data:,first", "--next", "-F", "a=b", "-d", "x", "data:,second"])
        #expect(clash.status == 2 && clash.stdout.isEmpty, "\(clash.stdout) \(clash.stderr)")
        for arguments in [["data:,first", "--next"], ["--next", "data:,second"], ["data:,first", "-:", "-:", "data:,third"]] {
            let run = try await LoadURLProcess.run(arguments)
            #expect(run.status == 2 && run.stdout.isEmpty, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("no URL"), "\(run.stderr)")
        }
        // A -K file's `next` line divides as --next does, and the global options of either side hold for both.
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("next-\(UUID().uuidString).conf")
        try Data("url = \"data:,one\"\nnext\nsilent\nparallel-max = 7\nurl = \"data:,two\"\n".utf8).write(to: config)
        defer { try? FileManager.default.removeItem(at: config) }
        let fromFile = try LoadURL.operations(["-K", config.path])
        #expect(fromFile.map(\.urls) == [["data:,one"], ["data:,two"]])
        #expect(fromFile.map(\.silent) == [true, true] && fromFile.map(\.parallelMax) == [7, 7])
        let operations = try LoadURL.operations(["-d", "--next", "data:,a", "--", "--next"])
        #expect(operations.count == 1)
        #expect(operations.first?.urls == ["data:,a", "--next"])
        #expect(operations.first?.data == ["--next"])
    }
}
