import Foundation
import TestSupport
import Testing

/// Runs the built `loadurl` executable, as a user would, and checks its output and exit status.
@Suite("loadurl: the command-line tool, run as a process")
struct CLIProcessTests {
    @Test("Fetches a data: URL and a file: URL in one call, bodies in order")
    func mixedSchemes() async throws {
        let file = try TempFile("from a file\n")
        let run = try await LoadURLProcess.run(["data:,Hello%0A", file.url.absoluteString, "data:,Bye"])
        #expect(run.status == 0)
        #expect(run.stdout == "Hello\nfrom a file\nBye")
        #expect(run.stderr.isEmpty)
    }

    @Test("-V and --version print the version, the schemes it loads and its features, as curl's, and load nothing (exit 0)")
    func version() async throws {
        for flag in ["-V", "--version"] {
            // A URL that would fail: nothing is loaded.
            let run = try await LoadURLProcess.run([flag, "file:///nonexistent/\(flag)"])
            #expect(run.status == 0 && run.stderr.isEmpty, "\(flag): \(run.status) \(run.stderr)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("loadurl ") == true, "\(lines)")
            let protocols = Set(lines.first { $0.hasPrefix("Protocols: ") }?.dropFirst(11).split(separator: " ").map(String.init) ?? [])
            #expect(Set(["data", "file", "ftp", "ftps", "http", "https", "ws", "wss"]).isSubset(of: protocols), "\(protocols)")
            #expect(lines.contains { $0.hasPrefix("Features: ") && $0.contains("HTTP2") }, "\(lines)")
        }
    }

    @Test("-i prints each response's head, curl-style, for data: and file: too")
    func includeHead() async throws {
        let file = try TempFile("abc")
        let run = try await LoadURLProcess.run(["-i", "data:,Hello", file.url.absoluteString])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("Content-Type: text/plain;charset=US-ASCII\r\nContent-Length: 5\r\n\r\nHello"))
        let fileHead = run.stdout.dropFirst("Content-Type: text/plain;charset=US-ASCII\r\nContent-Length: 5\r\n\r\nHello".count)
        #expect(fileHead.contains("Content-Length: 3\r\n"))
        #expect(fileHead.contains("Last-Modified: "))
        #expect(fileHead.hasSuffix("\r\n\r\nabc"))
    }

    @Test("A missing file exits 37 with a message naming the URL, and later URLs still load")
    func missingFile() async throws {
        let url = "file:///nonexistent-\(UUID().uuidString)/x.txt"
        let run = try await LoadURLProcess.run([url, "data:,after"])
        #expect(run.status == 37)
        #expect(run.stderr.contains(url))
        #expect(run.stderr.contains("does not exist"))
        #expect(run.stdout == "after")
    }

    @Test("--fail-early stops at the first failure, the URLs after it not loaded (with -Z those running aborted), and exits with its status: one after another, with --next, and with -Z")
    func failEarly() async throws {
        let missing = "file:///nonexistent-\(UUID().uuidString)/x.txt"
        let serial = try await LoadURLProcess.run(["-s", "--fail-early", "data:,before", missing, "data:,after"])
        #expect(serial.status == 37 && serial.stdout == "before", "\(serial.status) \(serial.stdout)")
        let operations = try await LoadURLProcess.run(["-s", missing, "--next", "--fail-early", "data:,after"])
        #expect(operations.status == 37 && operations.stdout.isEmpty, "\(operations.status) \(operations.stdout)")
        let parallel = try await LoadURLProcess.run(["-s", "-Z", "--parallel-max", "1", "--fail-early", missing, "data:,after"])
        #expect(parallel.status == 37 && parallel.stdout.isEmpty, "\(parallel.status) \(parallel.stdout)")
        // With -Z the transfers running are aborted, as curl's: a 4 MiB body at 256 KiB/s does not come whole.
        let nginx = try TestServers.requireNginx()
        let aborted = try await LoadURLProcess.run(["-s", "-Z", "--fail-early", "http://127.0.0.1:\(nginx.httpPort)/slow/4m.bin", missing])
        #expect(aborted.status == 37 && aborted.stdout.utf8.count < 4 << 20, "\(aborted.status), \(aborted.stdout.utf8.count) bytes")
        // Without it every URL is loaded.
        let all = try await LoadURLProcess.run(["-s", missing, "data:,after"])
        #expect(all.status == 37 && all.stdout == "after")
    }

    @Test("-Z --fail-early --remove-on-error: a transfer aborted part way has its file removed too, as curl's cleanup does")
    func abortedFileRemoved() async throws {
        let nginx = try TestServers.requireNginx()
        let late = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers").port
        try await withTemporaryFolder("cli-aborted") { folder in
            let file = folder.appendingPathComponent("4m.bin").path
            // The 4 MiB body comes at 256 KiB/s; the other transfer fails after a second (-m 1; its answer is 3 s late).
            let run = try await LoadURLProcess.run(["-s", "-Z", "--fail-early", "--remove-on-error", "-o", file,
                                                    "http://127.0.0.1:\(nginx.httpPort)/slow/4m.bin",
                                                    "--next", "-m", "1", "http://127.0.0.1:\(late)/slow/\(UUID().uuidString)/1"])
            #expect(run.status == 28, "\(run.status): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: file), "the aborted transfer's partial file was left")
        }
    }

    @Test("--stderr FILE takes what goes to standard error, for every operation; --stderr - sends it to standard output")
    func standardErrorRedirected() async throws {
        let log = try TempFile("", name: "stderr.log")
        let missing = "file:///nonexistent-\(UUID().uuidString)/x"
        let run = try await LoadURLProcess.run(["--stderr", log.url.path, "data:,a", "--next", missing])
        #expect(run.status == 37 && run.stdout == "a" && run.stderr.isEmpty, "\(run.stderr)")
        let logged = try String(contentsOf: log.url, encoding: .utf8)
        #expect(logged.contains("(37)") && logged.contains(missing), "\(logged)")
        let merged = try await LoadURLProcess.run(["--stderr", "-", missing])
        #expect(merged.status == 37 && merged.stdout.contains(missing) && merged.stderr.isEmpty, "\(merged.stdout) | \(merged.stderr)")
    }

    @Test("-N, -q and -# are taken as curl's (output is never buffered, no .curlrc is read, the meter is a bar), run together with others too")
    func acceptedNoOps() async throws {
        let run = try await LoadURLProcess.run(["-q", "-sN", "--no-buffer", "--disable", "-#", "--progress-bar", "data:,x"])
        #expect(run.status == 0 && run.stdout == "x", "\(run.status) \(run.stderr)")
    }

    @Test("An unknown scheme exits 1 and a malformed URL exits 3")
    func badURLs() async throws {
        let unknown = try await LoadURLProcess.run(["gopher-ish://x/y"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("gopher-ish://x/y"))
        let malformed = try await LoadURLProcess.run(["not a url"])
        #expect(malformed.status == 3)
        #expect(malformed.stderr.contains("not a url"))
    }

    @Test("A malformed data: URL fails with a message, not a crash")
    func malformedDataURL() async throws {
        let run = try await LoadURLProcess.run(["data:text/plain;base64,%%%"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("data:text/plain;base64"))
    }

    @Test("-s silences errors, -sS shows them; the status is the same")
    func silent() async throws {
        let url = "file:///nonexistent-\(UUID().uuidString)"
        let quiet = try await LoadURLProcess.run(["-s", url])
        #expect(quiet.status == 37)
        #expect(quiet.stderr.isEmpty)
        let shown = try await LoadURLProcess.run(["-sS", url])
        #expect(shown.status == 37)
        #expect(shown.stderr.contains(url))
    }

    @Test("-o writes the body to a file; -O uses the remote name inside --output-dir")
    func outputFiles() async throws {
        let source = try TempFile("payload", name: "remote-name.txt")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try await LoadURLProcess.run([
            "--create-dirs", "--output-dir", directory.path, "-o", "first.txt", "-O",
            "data:,one", source.url.absoluteString,
        ])
        #expect(run.status == 0)
        #expect(run.stdout.isEmpty)
        #expect(try String(contentsOf: directory.appendingPathComponent("first.txt"), encoding: .utf8) == "one")
        #expect(try String(contentsOf: directory.appendingPathComponent("remote-name.txt"), encoding: .utf8) == "payload")
    }

    @Test("-o and -O pair with the URLs in the order given, as curl's do")
    func outputOrder() async throws {
        let first = try TempFile("first body", name: "first-remote.txt")
        // -O alone, and run together with other flags as curl's users write it (-LO).
        for remoteName in ["-O", "-sLO"] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
            defer { try? FileManager.default.removeItem(at: directory) }
            let run = try await LoadURLProcess.run([
                "--create-dirs", "--output-dir", directory.path, remoteName, first.url.absoluteString, "-o", "second.txt", "data:,second",
            ])
            #expect(run.status == 0, "\(remoteName): \(run.stderr)")
            #expect(try String(contentsOf: directory.appendingPathComponent("first-remote.txt"), encoding: .utf8) == "first body", "\(remoteName)")
            #expect(try String(contentsOf: directory.appendingPathComponent("second.txt"), encoding: .utf8) == "second", "\(remoteName)")
        }
    }

    @Test("-O takes the remote name as written: an encoded slash or dot-dot cannot lead the file out of --output-dir")
    func remoteNameStaysInside() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
        let directory = base.appendingPathComponent("a/b")
        defer { try? FileManager.default.removeItem(at: base) }
        let run = try await LoadURLProcess.run(["--create-dirs", "--output-dir", directory.path, "-O", "data:,x/..%2F..%2Fescape.txt"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: base.appendingPathComponent("escape.txt").path), "the file left --output-dir")
        let written = directory.appendingPathComponent("..%2F..%2Fescape.txt")
        #expect(try String(contentsOf: written, encoding: .utf8) == "x/../../escape.txt")
    }

    @Test("-O of a URL with no file name saves curl_response, as curl 8.10 on does, and says so unless -s")
    func noRemoteName() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
        let output = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("listed"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A folder's URL, ending in a slash: its listing, and no name to take.
        let listed = folder.appendingPathComponent("listed").absoluteString
        #expect(listed.hasSuffix("/"))
        let run = try await LoadURLProcess.run(["--create-dirs", "--output-dir", output.path, "-O", listed])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: output.appendingPathComponent("curl_response").path))
        #expect(run.stderr.contains("no file name") && run.stderr.contains("curl_response"), "\(run.stderr)")
        let quiet = try await LoadURLProcess.run(["-s", "--output-dir", output.path, "-O", listed])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test("A failed load creates no output file")
    func noFileOnFailure() async throws {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID()).out")
        let run = try await LoadURLProcess.run(["-o", target.path, "file:///nonexistent-\(UUID().uuidString)"])
        #expect(run.status == 37)
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    @Test("-w prints a summary after each transfer")
    func writeOut() async throws {
        let run = try await LoadURLProcess.run(["-w", "[%{size_download} %{content_type} %{exitcode}]\\n", "data:text/csv,a%2Cb"])
        #expect(run.status == 0)
        #expect(run.stdout == "a,b[3 text/csv 0]\n")
    }

    @Test("No URL is a usage error")
    func noURL() async throws {
        let run = try await LoadURLProcess.run([])
        #expect(run.status == 2)
    }

    @Test("loadurl loads FoundationEssentials alone: not Foundation, its ICU data and internationalization (5 MiB more of every run's memory)")
    func linksFoundationEssentialsAlone() async throws {
        // Waited for on a thread of its own: in a full run ldd took seconds, one of the cooperative pool's two threads.
        let listed = try await offCooperativePool { () throws -> String in
            let ldd = Process()
            ldd.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
            ldd.arguments = [LoadURLProcess.executable.path]
            let out = Pipe()
            ldd.standardOutput = out
            try ldd.run()
            let listed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            ldd.waitUntilExit()
            return listed
        }
        let libraries = listed.split(separator: "\n").compactMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init) }
        #expect(libraries.contains("libFoundationEssentials.so"), "\(listed)")
        for unwanted in ["libFoundation.so", "lib_FoundationICU.so", "libFoundationInternationalization.so"] {
            #expect(!libraries.contains(unwanted), "\(unwanted) in \(listed)")
        }
    }
}

/// Runs `body` with a fresh temporary folder, removed with what it holds when `body` ends.
func withTemporaryFolder<T>(_ prefix: String, _ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}

/// A file in a fresh temporary folder, removed when the test ends.
final class TempFile {
    let url: URL
    init(_ contents: String, name: String = "file with space.txt") throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        url = directory.appendingPathComponent(name)
        try Data(contents.utf8).write(to: url)
    }
    deinit { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
}

/// Runs the `loadurl` binary built next to the test bundle.
enum LoadURLProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var executable: URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("loadurl")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/loadurl")
    }

    /// Runs `loadurl` with `arguments`; `environment` adds to (or overrides) the test process's own; `input`, if
    /// given, is its standard input (else it reads an empty one), from a regular file or, with `inputThroughPipe`,
    /// down a pipe as in `cmd | loadurl`; `output`, if given, takes its standard output (a large one), which the
    /// result then leaves empty. `terminal` says whether it has the test process's controlling terminal (if any), one
    /// of its own (`script`'s pseudo terminal, which `input` is typed into and whose output, echo and prompts with the
    /// standard output, is `stdout`), or none (`setsid`). `user`, if given, is the user and group ID it runs as
    /// (`setpriv`, with no supplementary groups; for a test run as root, with the test process's terminal).
    ///
    /// The waits are on threads of their own (``offCooperativePool(_:)``): held on Swift's cooperative pool or
    /// dispatch's global queues (one pool, two threads here) for a child's whole run, they starved the other
    /// suites' loads until their request timeouts fired.
    static func run(_ arguments: [String], environment: [String: String] = [:], input: Data? = nil, inputThroughPipe: Bool = false,
                    output: URL? = nil, terminal: TerminalUse = .inherited, user: UInt32? = nil, timeout: TimeInterval = 60) async throws -> Result {
        try await offCooperativePool {
            try runWaiting(arguments, environment: environment, input: input, inputThroughPipe: inputThroughPipe, output: output,
                           terminal: terminal, user: user, timeout: timeout)
        }
    }

    private static func runWaiting(_ arguments: [String], environment: [String: String], input: Data?, inputThroughPipe: Bool,
                                   output: URL?, terminal: TerminalUse, user: UInt32?, timeout: TimeInterval) throws -> Result {
        let process = Process()
        switch terminal {
        case .inherited where user != nil:
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user!)", "--regid=\(user!)", "--clear-groups", executable.path] + arguments
        case .inherited:
            process.executableURL = executable
            process.arguments = arguments
        case .own:
            // util-linux's script: -e gives the child's exit status, -c a shell command line (each word quoted).
            let words = ([executable.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            process.arguments = ["-q", "-e", "-c", words.joined(separator: " "), "/dev/null"]
        case .none:
            // util-linux's setsid: a new session has no controlling terminal; -w waits and gives the child's status.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
            process.arguments = ["-w", executable.path] + arguments
        }
        // The machine's proxy variables are not the test's: loadurl reads them as curl does.
        let proxyVariables = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY", "HTTP_PROXY"]
        process.environment = ProcessInfo.processInfo.environment.filter { !proxyVariables.contains($0.key) }.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        if let output {
            guard FileManager.default.createFile(atPath: output.path, contents: nil) else { throw CLITestError.cannotCreate(output) }
            process.standardOutput = try FileHandle(forWritingTo: output)
            // Nothing comes down the pipe: its writing end is closed here, so that reading it ends at once.
            try out.fileHandleForWriting.close()
        } else {
            process.standardOutput = out
        }
        process.standardError = err
        let inputPipe = Pipe()
        if input != nil, inputThroughPipe {
            process.standardInput = inputPipe
        } else if let input {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("loadurl-stdin-\(UUID().uuidString)")
            try input.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            process.standardInput = try FileHandle(forReadingFrom: file)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        try process.run()
        if let input, inputThroughPipe {
            // Written from a thread of its own, as a command before `|` does: a pipe holds only 64 KiB until read. A
            // child that exits unread makes the write fail (EPIPE) rather than end this process.
            signal(SIGPIPE, SIG_IGN)
            let writer = inputPipe.fileHandleForWriting
            Thread.detachNewThread {
                try? writer.write(contentsOf: input)
                try? writer.close()
            }
        }
        // Read both pipes concurrently so a large output cannot block the child, each on a thread of its own.
        let group = DispatchGroup()
        nonisolated(unsafe) var stdout = Data(), stderr = Data()
        group.enter()
        group.enter()
        Thread.detachNewThread { stdout = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        Thread.detachNewThread { stderr = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            throw CLITestError.timedOut(arguments)
        }
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// Which terminal a `loadurl` run has (``LoadURLProcess/run(_:environment:input:inputThroughPipe:output:terminal:timeout:)``).
enum TerminalUse {
    /// The test process's, if it has one.
    case inherited
    /// A pseudo terminal of its own.
    case own
    /// None at all.
    case none
}

enum CLITestError: Error {
    case timedOut([String])
    case cannotCreate(URL)
}
