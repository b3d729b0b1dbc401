import Foundation
import Loader
@testable import LoadURLCommand
import TestSupport
import Testing

/// `-n`, `--netrc-optional` and `--netrc-file`: logins from a `.netrc` file, as curl reads one.
@Suite("loadurl: .netrc logins (-n, --netrc-file, --netrc-optional)")
struct CLINetrcTests {
    @Test("A .netrc's entries: machine or default, login and password in any layout, quoted words, account, macdef and comments skipped")
    func parsing() {
        let file = Netrc("""
            # a comment
            machine ftp.example login anna password "two words \\"q\\""
            macdef init
            cd pub
            machine macro.example login never

            machine Example.org
              account acct login bob
              password b0b
            default login anon password guest@
            machine late.example login late password late
            """)
        #expect(file.entries.count == 4, "the macro's body is no entry: \(file.entries)")
        #expect(file.credential(host: "ftp.example", user: nil)! == ("anna", "two words \"q\""))
        #expect(file.credential(host: "example.ORG", user: nil)! == ("bob", "b0b"), "hosts compare without case")
        #expect(file.credential(host: "example.org", user: "bob")! == ("bob", "b0b"))
        // A URL's own user that the host's entry does not name: on to default, whose login differs too.
        #expect(file.credential(host: "example.org", user: "carol") == nil)
        #expect(file.credential(host: "other.example", user: nil)! == ("anon", "guest@"))
        #expect(file.credential(host: "late.example", user: nil)! == ("anon", "guest@"), "default, read first, wins as in curl")
        #expect(Netrc("").credential(host: "h", user: nil) == nil)
    }

    @Test("The URL's host's login goes into the request unless -u or the URL gives one; a missing file fails each URL with 26 (-n) or is nothing (--netrc-optional)")
    func requests() throws {
        let file = try TempFile("machine h login u password p\n", name: "netrc")
        func url(_ arguments: [String]) throws -> String {
            let command = try LoadURL.parseQuickly(arguments)
            return try command.makeRequest(URL(string: command.urls[0])!, options: command.requestOptions).url.absoluteString
        }
        #expect(try url(["--netrc-file", file.url.path, "http://h/x"]) == "http://u:p@h/x")
        #expect(try url(["--netrc-file", file.url.path, "ftp://u@h/x"]) == "ftp://u:p@h/x")
        #expect(try url(["--netrc-file", file.url.path, "http://h:8080/x"]) == "http://u:p@h:8080/x")
        #expect(try url(["--netrc-file", file.url.path, "http://other/x"]) == "http://other/x")
        #expect(try url(["--netrc-file", file.url.path, "http://me:mine@h/x"]) == "http://me:mine@h/x")
        #expect(try url(["--netrc-file", file.url.path, "-u", "x:y", "ftp://h/x"]) == "ftp://x:y@h/x", "-u wins")
        let missing = #expect(throws: LoadError.self) { _ = try url(["--netrc-file", "/no/such/netrc", "http://h/x"]) }
        #expect(missing?.code == .requestBodyStreamExhausted)
        #expect(missing?.reason == "-n: cannot read /no/such/netrc: No such file or directory")
        #expect(try url(["--netrc-optional", "--netrc-file", "/no/such/netrc", "http://h/x"]) == "http://h/x")
    }

    @Test("loadurl logs in to nginx's Basic location and to the FTP server's upload folder with the .netrc's login; --netrc-optional reads $HOME/.netrc")
    func logins() async throws {
        let nginx = try TestServers.requireNginx()
        let ftp = try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
        try await withTemporaryFolder("cli-netrc") { home in
            try Data("machine 127.0.0.1 login user password secret\n".utf8).write(to: home.appendingPathComponent(".netrc"))
            let private_ = "http://127.0.0.1:\(nginx.httpPort)/private"
            let denied = try await LoadURLProcess.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", private_], environment: ["HOME": home.path])
            #expect(denied.stdout == "401")
            let allowed = try await LoadURLProcess.run(["-sS", "-n", private_], environment: ["HOME": home.path])
            #expect(allowed.status == 0 && allowed.stdout == "Hello from nginx\n", "\(allowed.stderr)")
            let upload = try TempFile("by netrc\n", name: "up.txt")
            let target = "ftp://127.0.0.1:\(ftp.port)/upload/netrc-\(UUID().uuidString).txt"
            let anonymous = try await LoadURLProcess.run(["-sS", "-T", upload.url.path, target], environment: ["HOME": home.path])
            #expect(anonymous.status != 0, "anonymous may not write there")
            let stored = try await LoadURLProcess.run(["-sS", "--netrc-optional", "-T", upload.url.path, target], environment: ["HOME": home.path])
            #expect(stored.status == 0, "\(stored.stderr)")
            let read = try await LoadURLProcess.run(["-sS", target])
            #expect(read.stdout == "by netrc\n")
        }
    }
}
