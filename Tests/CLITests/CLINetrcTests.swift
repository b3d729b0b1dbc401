import Foundation
import Loader
@testable import LoadURLCommand
import TestSupport
import Testing

/// `-n`, `--netrc-optional` and `--netrc-file`: logins from a `.netrc` file, as curl reads one.
@Suite("loadurl: .netrc logins (-n, --netrc-file, --netrc-optional)")
struct CLINetrcTests {
    @Test("A .netrc's entries: machine or default, keywords in any case, login and password in any layout, quoted words, account, macdef and comments skipped")
    func parsing() throws {
        let file = try Netrc("""
            # a comment
            machine ftp.example login anna password "two words \\"q\\""
            macdef init
            cd pub
              \t
            machine macro.example login never

            MACHINE Example.org
              account acct Login bob
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
        #expect(try Netrc("").credential(host: "h", user: nil) == nil)
        // A password may be a keyword or start with #; a macro's name alone on its line still starts a macro.
        let odd = try Netrc("machine a login x password macdef\nmachine b login y password #z\nmacdef\nm\nmachine c login no\n\nmachine d login w\n")
        #expect(odd.entries.map(\.machine) == ["a", "b", "d"])
        #expect(odd.credential(host: "b", user: nil)! == ("y", "#z"))
        let unclosed = #expect(throws: Netrc.Malformed.self) { _ = try Netrc("machine a\nlogin \"x\n") }
        #expect(unclosed?.description == "line 2: a quoted word has no closing quote")
    }

    @Test("The URL's host's login: HTTP(S) Basic sent ahead, FTP's and --digest's as the URL's user info; -u and -H Authorization win; -n over a URL's password, --netrc-optional not")
    func requests() throws {
        let file = try TempFile("machine h login u password p\ndefault login d password q\n", name: "netrc")
        func request(_ arguments: [String]) throws -> (url: String, authorization: String?) {
            let command = try LoadURL.parseQuickly(arguments)
            let made = try command.makeRequest(URL(string: command.urls[0])!, options: command.requestOptions)
            return (made.url.absoluteString, made.headerFields[.authorization])
        }
        let basic = Credential(user: "u", password: "p").basicAuthorization
        #expect(try request(["--netrc-file", file.url.path, "http://h/x"]) == ("http://h/x", basic))
        #expect(try request(["--netrc-file", file.url.path, "wss://h:8080/x"]) == ("wss://h:8080/x", basic))
        #expect(try request(["--netrc-file", file.url.path, "ftp://u@h/x"]) == ("ftp://u:p@h/x", nil))
        #expect(try request(["--netrc-file", file.url.path, "--digest", "http://h/x"]) == ("http://u:p@h/x", nil))
        #expect(try request(["--netrc-file", file.url.path, "http://u:old@h/x"]) == ("http://h/x", basic), "-n: the .netrc's password wins")
        // --netrc-optional: the URL's own password stands, sent ahead as Basic as curl sends a URL's login.
        #expect(try request(["--netrc-optional", "--netrc-file", file.url.path, "http://u:old@h/x"])
                == ("http://u:old@h/x", Credential(user: "u", password: "old").basicAuthorization))
        #expect(try request(["--netrc-file", file.url.path, "-u", "x:y", "ftp://h/x"]) == ("ftp://x:y@h/x", nil), "-u wins")
        #expect(try request(["--netrc-file", file.url.path, "-H", "Authorization: Bearer t", "http://h/x"]).authorization == "Bearer t")
        #expect(try request(["--netrc-file", file.url.path, "file:///etc/hostname"]) == ("file:///etc/hostname", nil), "no login for file:")
        // A file that cannot be read: warned of, and the transfers go on without it, as curl's.
        #expect(try request(["--netrc-file", "/no/such/netrc", "http://h/x"]) == ("http://h/x", nil))
        let broken = try TempFile("machine h password \"open\n", name: "netrc")
        let malformed = #expect(throws: LoadError.self) { _ = try request(["--netrc-file", broken.url.path, "http://h/x"]) }
        #expect(malformed?.code == .requestBodyStreamExhausted)
        #expect(malformed?.reason == "-n: line 1: a quoted word has no closing quote")
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
            // A redirect to another origin (another port of the host) loses the first one's Authorization in the
            // session and gets its own host's from the .netrc again, as curl looks it up per host.
            let hops = try await LoadURLProcess.run(["-v", "-s", "-L", "-n", "-o", "/dev/null", "http://127.0.0.1:\(nginx.httpPort)/to-digest"],
                                                    environment: ["HOME": home.path])
            let sent = hops.stderr.split(separator: "\n").filter { $0.lowercased().hasPrefix("> authorization: basic ") }
            #expect(sent.count == 2, "\(hops.stderr)")
        }
    }
}
