import Foundation
import FTPScheme
@testable import LoadURLCommand
import TestSupport
import Testing

/// `loadurl` against the real FTP server: downloads, listings, uploads, curl's exit statuses.
@Suite("loadurl: ftp against pyftpdlib")
struct CLIFTPTests {
    /// A temporary file holding `text`, to upload; the caller removes it.
    private func uploadFile(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cli-up-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: file)
        return file
    }

    private func ftp() throws -> TestServers.FTP {
        try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
    }

    @Test("-d, -F and -X leave an ftp: or file: URL read, as curl's post and name methods for HTTP alone: nothing is stored")
    func dataDoesNotUpload() async throws {
        let server = try ftp()
        let name = "/upload/posted-\(UUID().uuidString).txt"
        let url = "ftp://user:secret@127.0.0.1:\(server.port)\(name)"
        let posted = try await LoadURLProcess.run(["-sS", "-d", "x", "ftp://127.0.0.1:\(server.port)/hello.txt", "-d", "y", url])
        #expect(posted.stdout.hasPrefix("Hello from FTP\n"), "\(posted.stderr)")
        #expect(!FileManager.default.fileExists(atPath: server.root + name), "a POST stored the file")
        // -X names an HTTP method: an FTP download goes on as one.
        let custom = try await LoadURLProcess.run(["-sS", "-X", "FOO", "ftp://127.0.0.1:\(server.port)/hello.txt"])
        #expect(custom.status == 0 && custom.stdout == "Hello from FTP\n", "\(custom.stderr)")
        let file = try uploadFile("local text\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let form = try await LoadURLProcess.run(["-sS", "-F", "a=b", file.absoluteString])
        #expect(form.status == 0 && form.stdout == "local text\n", "\(form.stderr)")
    }

    @Test("--resolve and --connect-to hold for ftp:// URLs too, as curl's (through libcurl's own lists); a name neither routes is not found")
    func routesForFTP() async throws {
        let server = try ftp()
        let resolved = try await LoadURLProcess.run(["-sS", "--resolve", "files.test:\(server.port):127.0.0.1", "ftp://files.test:\(server.port)/hello.txt"])
        #expect(resolved.status == 0 && resolved.stdout == "Hello from FTP\n", "\(resolved.stderr)")
        let redirected = try await LoadURLProcess.run(["-sS", "--connect-to", "files.test:21:127.0.0.1:\(server.port)", "ftp://files.test/hello.txt"])
        #expect(redirected.status == 0 && redirected.stdout == "Hello from FTP\n", "\(redirected.stderr)")
        let unrouted = try await LoadURLProcess.run(["-sS", "ftp://files.test:\(server.port)/hello.txt"])
        #expect(unrouted.status == 6, "\(unrouted.stderr)")
    }

    @Test("--ssl-reqd asks for explicit FTPS and -E shows a client certificate to a server that wants one; without it, exit 56; --ssl falls back to plain FTP")
    func clientCertificate() async throws {
        let server = try ftp()
        let tls = try #require(TestServers.mutualTLS, "the mutual-TLS certificates could not be made by scripts/test-servers")
        let url = "ftp://localhost:\(server.clientCertificatePort)/hello.txt"
        let shown = try await LoadURLProcess.run(["--ssl-reqd", "--cacert", server.caFile, "-E", tls.combined, url])
        #expect(shown.status == 0 && shown.stdout == "Hello from FTP\n", "\(shown.stderr)")
        let refused = try await LoadURLProcess.run(["--ssl-reqd", "--cacert", server.caFile, url])
        #expect(refused.status == 56, "\(refused.stderr)")
        #expect(refused.stderr.contains("client certificate"), "\(refused.stderr)")
        // The plain server offers no TLS: --ssl goes on without it, --ssl-reqd fails (curl's 64 is our TLS failure, 35).
        let plain = "ftp://127.0.0.1:\(server.port)/hello.txt"
        let tried = try await LoadURLProcess.run(["--ssl", plain])
        #expect(tried.status == 0 && tried.stdout == "Hello from FTP\n", "\(tried.stderr)")
        let required = try await LoadURLProcess.run(["--ssl-reqd", plain])
        #expect(required.status == 35, "\(required.stderr)")
    }

    @Test("-4 reaches the FTP server, which listens on IPv4 alone; -6 does not (libcurl's IPRESOLVE): exit 7 (6 without IPv6)")
    func ipVersion() async throws {
        let url = "ftp://localhost:\(try ftp().port)/hello.txt"
        let four = try await LoadURLProcess.run(["-sS", "-4", url])
        #expect(four.status == 0 && four.stdout == "Hello from FTP\n", "\(four.stderr)")
        let six = try await LoadURLProcess.run(["-sS", "-6", url])
        // libcurl takes localhost as ::1 where the machine has IPv6, and nothing listens there; elsewhere it finds none.
        #expect(six.status == 7 || six.status == 6, "\(six.stderr)")
        #expect(six.stdout.isEmpty)
    }

    @Test("-x takes FTP through a SOCKS5, SOCKS4, HTTP or HTTPS proxy (its log shows the control and data connections), -U logging in to it; a proxy that refuses is exit 7; -x '' goes direct whatever all_proxy says, and all_proxy alone is used, as curl")
    func proxies() async throws {
        let server = try ftp()
        let proxies = try #require(TestServers.proxies, "the proxies could not be started by scripts/test-servers")
        let url = "ftp://127.0.0.1:\(server.port)/hello.txt"
        let logged = { (try? String(contentsOfFile: proxies.socksLog, encoding: .utf8))?.components(separatedBy: "\n").count ?? 0 }
        let before = logged()
        let socks = try await LoadURLProcess.run(["-sS", "-x", "socks5h://127.0.0.1:\(proxies.socksPort)", url])
        #expect(socks.status == 0 && socks.stdout == "Hello from FTP\n", "\(socks.stderr)")
        let lines = ((try? String(contentsOfFile: proxies.socksLog, encoding: .utf8)) ?? "").components(separatedBy: "\n").dropFirst(max(0, before - 1))
        #expect(lines.contains { $0.contains("pass(") && $0.contains("127.0.0.1.\(server.port)") }, "the SOCKS proxy did not carry the control connection")
        #expect(lines.filter { $0.contains("pass(") }.count >= 2, "the data connection went around the proxy")
        let socks4 = try await LoadURLProcess.run(["-sS", "-x", "socks4://127.0.0.1:\(proxies.socksPort)", url])
        #expect(socks4.status == 0 && socks4.stdout == "Hello from FTP\n", "SOCKS4, as libcurl speaks it: \(socks4.stderr)")

        let http = try await LoadURLProcess.run(["-sS", "-x", "http://127.0.0.1:\(proxies.port)", "--proxy-header", "X-Proxy-Note: ftp", url])
        #expect(http.status == 0 && http.stdout == "Hello from FTP\n", "\(http.stderr)")
        // A proxy that asks for a login gets -U's, as curl gives it; without, it refuses.
        let authenticated = try await LoadURLProcess.run(["-sS", "-x", "http://127.0.0.1:\(proxies.authPort)", "-U", "user:secret", url])
        #expect(authenticated.status == 0 && authenticated.stdout == "Hello from FTP\n", "\(authenticated.stderr)")
        let unauthenticated = try await LoadURLProcess.run(["-sS", "-x", "http://127.0.0.1:\(proxies.authPort)", url])
        #expect(unauthenticated.status != 0 && unauthenticated.stdout.isEmpty, "\(unauthenticated.status)")
        // An HTTPS proxy (TLS to it), its certificate checked with --proxy-cacert's CA; without it, curl's 60.
        let ca = try TestServers.requireNginx().caFile
        let overTLS = try await LoadURLProcess.run(["-sS", "--proxy-cacert", ca, "-x", "https://localhost:\(proxies.tlsAuthPort)", "-U", "user:secret", url])
        #expect(overTLS.status == 0 && overTLS.stdout == "Hello from FTP\n", "\(overTLS.stderr)")
        let untrusted = try await LoadURLProcess.run(["-sS", "-x", "https://localhost:\(proxies.tlsPort)", url])
        #expect(untrusted.status == 60 && untrusted.stdout.isEmpty, "\(untrusted.status): \(untrusted.stderr)")
        let unchecked = try await LoadURLProcess.run(["-sS", "--proxy-insecure", "-x", "https://localhost:\(proxies.tlsPort)", url])
        #expect(unchecked.status == 0 && unchecked.stdout == "Hello from FTP\n", "\(unchecked.stderr)")
        let closed = "http://127.0.0.1:\(LoopbackPorts.closed())"
        let refused = try await LoadURLProcess.run(["-sS", "-x", "socks5h://127.0.0.1:\(LoopbackPorts.closed())", url])
        #expect(refused.status == 7 && refused.stdout.isEmpty, "\(refused.status): \(refused.stderr)")
        let none = try await LoadURLProcess.run(["-sS", "-x", "", url], environment: ["all_proxy": closed])
        #expect(none.status == 0 && none.stdout == "Hello from FTP\n", "\(none.stderr)")
        let environmental = try await LoadURLProcess.run(["-sS", url], environment: ["all_proxy": closed])
        #expect(environmental.status == 7, "\(environmental.status): \(environmental.stderr)")
        let excepted = try await LoadURLProcess.run(["-sS", "--noproxy", "127.0.0.1", url], environment: ["all_proxy": closed])
        #expect(excepted.status == 0, "\(excepted.stderr)")
        // As curl: a proxy whose name is not found is 5, a SOCKS proxy that refuses (dante turns SOCKS4a away) 97.
        for proxy in ["http://no-such-proxy.invalid:3128", "socks5h://no-such-proxy.invalid:1080"] {
            let unnamed = try await LoadURLProcess.run(["-sS", "-x", proxy, url])
            #expect(unnamed.status == 5 && unnamed.stdout.isEmpty, "\(proxy): \(unnamed.status): \(unnamed.stderr)")
        }
        let socks4a = try await LoadURLProcess.run(["-sS", "-x", "socks4a://127.0.0.1:\(proxies.socksPort)", url])
        #expect(socks4a.status == 97 && socks4a.stdout.isEmpty, "\(socks4a.status): \(socks4a.stderr)")
    }

    @Test("Downloads and a listing in one call, with -i heads")
    func downloadAndList() async throws {
        let server = try ftp()
        let base = "ftp://127.0.0.1:\(server.port)"
        let run = try await LoadURLProcess.run(["-i", "\(base)/hello.txt", "\(base)/folder/"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Content-Length: 15\r\n"))
        #expect(run.stdout.contains("Hello from FTP\n"))
        #expect(run.stdout.contains("a.txt"))
        #expect(run.stdout.contains("text/plain; charset=utf-8"))
    }

    @Test("As curl, a file's time (MDTM) is asked only when the head is printed: -i shows Last-Modified, a plain download does not ask")
    func modificationDateOnlyForTheHead() async throws {
        let server = try ftp()
        func lines() -> [String] {
            ((try? String(contentsOfFile: server.countedCLIEvents, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        let url = "ftp://127.0.0.1:\(server.countedCLIPort)/hello.txt"
        // This suite's tests run side by side: each run's own connections are told by their client ports.
        func mdtms(since mark: Int) -> Int {
            let words = lines().dropFirst(mark).map { $0.split(separator: " ") }
            let ports = Set(words.filter { $0.count == 3 && $0[0] == "login" }.map { $0[2] })
            #expect(!ports.isEmpty, "no login seen since the mark")
            return words.filter { $0.count == 2 && $0[0] == "mdtm" && ports.contains($0[1]) }.count
        }
        var mark = lines().count
        let plain = try await LoadURLProcess.run([url, url])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == "Hello from FTP\nHello from FTP\n")
        #expect(mdtms(since: mark) == 0)

        mark = lines().count
        let head = try await LoadURLProcess.run(["-i", url])
        #expect(head.status == 0, "\(head.stderr)")
        #expect(head.stdout.contains("Last-Modified: "), "\(head.stdout)")
        #expect(mdtms(since: mark) == 1)
    }

    @Test("libcurl is loaded when the first ftp: URL comes: a run without one never maps it")
    func libcurlLoadedOnDemand() async throws {
        let server = try ftp()
        // The dynamic loader's own trace of every library it opens.
        let trace = ["LD_DEBUG": "files"]
        let other = try await LoadURLProcess.run(["data:,x"], environment: trace)
        #expect(other.status == 0)
        #expect(other.stderr.contains("file=libswiftCore.so"), "the loader's trace is missing: \(other.stderr.prefix(300))")
        #expect(!other.stderr.contains("libcurl"))
        let ftp = try await LoadURLProcess.run(["ftp://127.0.0.1:\(server.port)/hello.txt"], environment: trace)
        #expect(ftp.status == 0)
        #expect(ftp.stdout == "Hello from FTP\n")
        #expect(ftp.stderr.contains("file=libcurl.so.4"))
    }

    @Test("Without libcurl an ftp: URL fails with exit 1 and says why; the other URLs still load")
    func withoutLibcurl() async throws {
        let server = try ftp()
        let url = "ftp://127.0.0.1:\(server.port)/hello.txt"
        let run = try await LoadURLProcess.run([url, "data:,after"], environment: ["CCURL_LIBRARY": "/nonexistent/libcurl.so.4"])
        #expect(run.status == 1)
        #expect(run.stderr.contains(url))
        #expect(run.stderr.contains("cannot load libcurl"))
        #expect(run.stderr.contains("/nonexistent/libcurl.so.4"))
        #expect(run.stdout == "after")
    }

    @Test("-T uploads a file with -u credentials; the server has it byte for byte")
    func upload() async throws {
        let server = try ftp()
        let file = try uploadFile("uploaded by loadurl\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "cli-\(UUID().uuidString).txt"
        let run = try await LoadURLProcess.run(["-u", "user:secret", "-T", file.path, "ftp://127.0.0.1:\(server.port)/upload/\(name)"])
        #expect(run.status == 0, "\(run.stderr)")
        let stored = try Data(contentsOf: URL(fileURLWithPath: server.root + "/upload/" + name))
        #expect(stored == Data("uploaded by loadurl\n".utf8))
    }

    @Test("-a appends an upload to its FTP file; -l lists a folder's names alone (NLST), as curl's")
    func appendAndListOnly() async throws {
        let server = try ftp()
        let file = try uploadFile("a line\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "cli-append-\(UUID().uuidString).txt"
        let url = "ftp://127.0.0.1:\(server.port)/upload/\(name)"
        for _ in 0..<2 {
            let run = try await LoadURLProcess.run(["-sS", "-a", "-u", "user:secret", "-T", file.path, url])
            #expect(run.status == 0, "\(run.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: server.root + "/upload/" + name)) == Data("a line\na line\n".utf8))
        let names = try await LoadURLProcess.run(["-sS", "-l", "ftp://127.0.0.1:\(server.port)/folder/"])
        #expect(names.status == 0 && names.stdout.split(whereSeparator: \.isNewline).sorted() == ["a.txt", "b.txt", "sub"], "\(names.stdout)")
        let long = try await LoadURLProcess.run(["-sS", "ftp://127.0.0.1:\(server.port)/folder/"])
        #expect(long.status == 0 && long.stdout.contains("b.txt") && long.stdout.split(whereSeparator: \.isNewline).sorted() != ["a.txt", "b.txt", "sub"],
                "without -l the server's long listing: \(long.stdout)")
    }

    @Test("-Q sends FTP commands: -CMD after the transfer (a DELE of the file fetched), CMD before it; a refusal exits 21 with nothing written, *CMD goes on; a line break is a usage error")
    func quote() async throws {
        let server = try ftp()
        let file = try uploadFile("fetched, then deleted\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "cli-quote-\(UUID().uuidString).txt"
        let url = "ftp://user:secret@127.0.0.1:\(server.port)/upload/\(name)"
        let stored = try await LoadURLProcess.run(["-sS", "-T", file.path, url])
        #expect(stored.status == 0, "\(stored.stderr)")
        let fetched = try await LoadURLProcess.run(["-sS", "-Q", "-DELE \(name)", url])
        #expect(fetched.status == 0 && fetched.stdout == "fetched, then deleted\n", "\(fetched.status) \(fetched.stderr)")
        #expect(!FileManager.default.fileExists(atPath: server.root + "/upload/" + name), "the DELE after the transfer removed it")
        let hello = "ftp://user:secret@127.0.0.1:\(server.port)/hello.txt"
        let refused = try await LoadURLProcess.run(["-sS", "-Q", "DELE no-such-file-\(UUID().uuidString)", hello])
        #expect(refused.status == 21 && refused.stdout.isEmpty && refused.stderr.contains("550"), "\(refused.status) \(refused.stderr)")
        let tolerated = try await LoadURLProcess.run(["-sS", "-Q", "*DELE no-such-file-\(UUID().uuidString)", hello])
        #expect(tolerated.status == 0 && tolerated.stdout == "Hello from FTP\n", "\(tolerated.status) \(tolerated.stderr)")
        // +CMD goes right before the transfer, in the file's folder: a DELE there leaves nothing to fetch (78).
        let again = try await LoadURLProcess.run(["-sS", "-T", file.path, url])
        #expect(again.status == 0, "\(again.stderr)")
        let early = try await LoadURLProcess.run(["-sS", "-Q", "+DELE \(name)", url])
        #expect(early.status == 78 && early.stdout.isEmpty, "\(early.status) \(early.stderr)")
        let broken = try await LoadURLProcess.run(["-sS", "-Q", "NOOP\r\nDELE hello.txt", hello])
        #expect(broken.status == 2 && broken.stderr.contains("line break"), "\(broken.status) \(broken.stderr)")
    }

    @Test("--ftp-create-dirs makes the folders an upload's path names; without it the upload is refused (9, as curl: the folder is not entered); -P - asks for active mode, a later --ftp-pasv undoes it (the last wins); -P with an address names where the server connects back to")
    func createDirectoriesAndActiveMode() async throws {
        let server = try ftp()
        let file = try uploadFile("in a new folder\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let folder = "new-\(UUID().uuidString)"
        let url = "ftp://127.0.0.1:\(server.port)/upload/\(folder)/deeper/file.txt"
        let refused = try await LoadURLProcess.run(["-sS", "-u", "user:secret", "-T", file.path, url])
        #expect(refused.status == 9, "\(refused.stderr)")
        let created = try await LoadURLProcess.run(["-sS", "-u", "user:secret", "--ftp-create-dirs", "-T", file.path, url])
        #expect(created.status == 0, "\(created.stderr)")
        let stored = try Data(contentsOf: URL(fileURLWithPath: server.root + "/upload/\(folder)/deeper/file.txt"))
        #expect(stored == Data("in a new folder\n".utf8))

        // -P - is the handler's active mode (downloading so is FTPSchemeTests' to prove: an active download here, beside
        // the other suites' sessions on the same pyftpdlib, made one of them hang about once in seventy, curl's alike).
        let hello = "ftp://127.0.0.1:\(server.port)/hello.txt"
        func activeMode(_ arguments: [String]) throws -> Bool {
            try LoadURL.parseQuickly(arguments + [hello]).makeConfiguration().handlerOptions[FTPOptions.self].usesActiveMode
        }
        #expect(try activeMode(["-P", "-"]) && activeMode(["--ftp-port", "-"]))
        #expect(try !activeMode([]) && !activeMode(["-P", "-", "--ftp-pasv"]))
        // The last of the two wins, as in curl.
        #expect(try activeMode(["--ftp-pasv", "-P", "-"]) && activeMode(["--ftp-pasv", "--ftp-port=-"]))
        // An address (with a range of ports to listen on) is where the server connects back to; - is the control
        // connection's own.
        func activeAddress(_ arguments: [String]) throws -> String? {
            try LoadURL.parseQuickly(arguments + [hello]).makeConfiguration().handlerOptions[FTPOptions.self].activeModeAddress
        }
        #expect(try activeAddress(["-P", "127.0.0.1:40000-40099"]) == "127.0.0.1:40000-40099")
        #expect(try activeAddress(["--ftp-port", "lo"]) == "lo" && activeAddress(["-P", "-"]) == nil)
        #expect(try activeMode(["-P", "127.0.0.1"]))
        // Its one port taken by a listener here, the client cannot listen for the server: curl's 30, before any PORT.
        let held = LoopbackPorts.held()
        defer { close(held.fd) }
        let taken = try await LoadURLProcess.run(["-sS", "-P", "127.0.0.1:\(held.port)-\(held.port)", hello])
        #expect(taken.status == 30 && taken.stdout.isEmpty, "\(taken.status) \(taken.stderr)")
    }

    @Test("-r gets a slice of an FTP file; from past its end it exits 36, as curl, not 78 (no such file)")
    func byteRange() async throws {
        let server = try ftp()
        let hello = "ftp://127.0.0.1:\(server.port)/hello.txt"
        let slice = try await LoadURLProcess.run(["-s", "-r", "0-4", hello])
        #expect(slice.status == 0 && slice.stdout.count == 5, "\(slice.stderr)")
        let past = try await LoadURLProcess.run(["-s", "-r", "100-", hello])
        #expect(past.status == 36 && past.stdout.isEmpty, "\(past.status) \(past.stderr)")
    }

    @Test("-T of a missing file exits 26 and leaves the server's file as it was; -T - uploads standard input; to a folder URL, under the file's name")
    func uploadChecks() async throws {
        let server = try ftp()
        let name = "cli-kept-\(UUID().uuidString).txt"
        let stored = URL(fileURLWithPath: server.root + "/upload/" + name)
        try Data("kept\n".utf8).write(to: stored)
        defer { try? FileManager.default.removeItem(at: stored) }
        let url = "ftp://127.0.0.1:\(server.port)/upload/\(name)"
        let missing = try await LoadURLProcess.run(["-u", "user:secret", "-T", "/no/such/file", url])
        #expect(missing.status == 26, "\(missing.stderr)")
        #expect(missing.stderr.contains("/no/such/file"), "\(missing.stderr)")
        #expect(try Data(contentsOf: stored) == Data("kept\n".utf8))

        let piped = try await LoadURLProcess.run(["-u", "user:secret", "-T", "-", url], input: Data("from stdin\n".utf8))
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(try Data(contentsOf: stored) == Data("from stdin\n".utf8))

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cli-named-\(UUID().uuidString).txt")
        try Data("named\n".utf8).write(to: file)
        let landed = URL(fileURLWithPath: server.root + "/upload/" + file.lastPathComponent)
        defer { try? FileManager.default.removeItem(at: file); try? FileManager.default.removeItem(at: landed) }
        let named = try await LoadURLProcess.run(["-u", "user:secret", "-T", file.path, "ftp://127.0.0.1:\(server.port)/upload/"])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(try Data(contentsOf: landed) == Data("named\n".utf8))
    }

    @Test("An upload the server refuses exits 25 (curl's upload failed), naming the URL; the server's file is not made")
    func refusedUpload() async throws {
        let server = try ftp()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cli-refused-\(UUID().uuidString).txt")
        try Data("refused\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        // Anonymous users may only read: the server refuses the STOR.
        let url = "ftp://127.0.0.1:\(server.port)/upload/\(file.lastPathComponent)"
        let run = try await LoadURLProcess.run(["-sS", "-T", file.path, url])
        #expect(run.status == 25, "\(run.stderr)")
        #expect(run.stderr.contains(url), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: server.root + "/upload/" + file.lastPathComponent))
    }

    @Test("Exit statuses as curl's: 78 for a missing remote file, 9 for a folder not entered, 67 for a refused login")
    func exitStatuses() async throws {
        let server = try ftp()
        let missing = try await LoadURLProcess.run(["ftp://127.0.0.1:\(server.port)/nope.txt"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("ftp://127.0.0.1:\(server.port)/nope.txt"))
        let denied = try await LoadURLProcess.run(["-sS", "ftp://user:Wr0ngPw@127.0.0.1:\(server.port)/hello.txt"])
        #expect(denied.status == 67)
        // A password never shows in a message, given in the URL or with -u.
        #expect(!denied.stderr.contains("Wr0ngPw") && denied.stderr.contains("ftp://user:***@127.0.0.1"), "\(denied.stderr)")
        let missingWithLogin = try await LoadURLProcess.run(["-sS", "-u", "user:secret", "ftp://127.0.0.1:\(server.port)/upload/nope.txt"])
        #expect(missingWithLogin.status == 78, "\(missingWithLogin.stderr)")
        #expect(!missingWithLogin.stderr.contains("secret") && missingWithLogin.stderr.contains("nope.txt"), "\(missingWithLogin.stderr)")
        // A folder of the path the server will not enter: 9, as curl, for a download and an upload alike (78 and 25 before).
        let folder = try await LoadURLProcess.run(["-sS", "ftp://127.0.0.1:\(server.port)/no-such-folder/file.txt"])
        #expect(folder.status == 9, "\(folder.stderr)")
        let upload = try await LoadURLProcess.run(["-sS", "-u", "user:secret", "-T", "/etc/hostname", "ftp://127.0.0.1:\(server.port)/upload/no-such-folder/"])
        #expect(upload.status == 9, "\(upload.stderr)")
        // -w's URLs too: -u puts the login into the URL, where curl's -w would not show it.
        let written = try await LoadURLProcess.run(["-u", "user:secret", "-o", "/dev/null", "-w", "%{url} %{url_effective}", "ftp://127.0.0.1:\(server.port)/hello.txt"])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(!written.stdout.contains("secret") && written.stdout.contains("/hello.txt"), "\(written.stdout)")
    }
}
