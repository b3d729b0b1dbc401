import Foundation
import TestSupport
import Testing

/// `loadurl --tlsv1.2`, `--tlsv1.3` and `--tls-max` against nginx (one port of TLS 1.2 alone) and pyftpdlib (FTPS of
/// TLS 1.2 alone and of TLS 1.3 alone); `-v` says the version each new connection speaks, as curl's does.
@Suite("loadurl: --tlsv1.2, --tlsv1.3 and --tls-max")
struct CLITLSVersionTests {
    @Test("-v names the version; --tls-max 1.2 speaks 1.2; --tlsv1.3 against a TLS 1.2 server exits 35; the last of --tlsv1.2 and --tlsv1.3 wins")
    func https() async throws {
        let nginx = try TestServers.requireNginx()
        let modern = "https://localhost:\(nginx.httpsPort)/hello.txt"
        let old = "https://localhost:\(nginx.tls12Port)/hello.txt"
        // Once per connection: the second URL goes on the first's.
        let plain = try await LoadURLProcess.run(["-sSv", "--cacert", nginx.caFile, modern, modern])
        #expect(plain.status == 0 && plain.stdout == "Hello from nginx\nHello from nginx\n", "\(plain.stderr)")
        #expect(plain.stderr.components(separatedBy: "* SSL connection using TLSv1.3\n").count == 2, "\(plain.stderr)")
        let capped = try await LoadURLProcess.run(["-sSv", "--cacert", nginx.caFile, "--tls-max", "1.2", modern])
        #expect(capped.status == 0 && capped.stderr.contains("* SSL connection using TLSv1.2\n"), "\(capped.status) \(capped.stderr)")
        let refused = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "--tlsv1.3", old])
        #expect(refused.status == 35 && refused.stdout.isEmpty && refused.stderr.contains(old), "\(refused.status) \(refused.stderr)")
        let lastWins = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "--tlsv1.3", "--tlsv1.2", old])
        #expect(lastWins.status == 0 && lastWins.stdout == "Hello from nginx\n", "\(lastWins.status) \(lastWins.stderr)")
    }

    @Test("FTPS follows them too: --tlsv1.3 refuses a TLS 1.2 server, --tls-max 1.2 a TLS 1.3 one (35)")
    func ftps() async throws {
        let ftp = try #require(TestServers.ftp, "pyftpdlib could not be started by scripts/test-servers")
        let old = "ftp://localhost:\(ftp.tls12Port)/hello.txt"
        let modern = "ftp://localhost:\(ftp.tls13Port)/hello.txt"
        for (options, url, status) in [(["--tlsv1.3"], old, Int32(35)), (["--tls-max", "1.2"], modern, 35), (["--tlsv1.3"], modern, 0), (["--tls-max", "1.2"], old, 0)] {
            let run = try await LoadURLProcess.run(["-sS", "--ssl-reqd", "--cacert", ftp.caFile] + options + [url])
            #expect(run.status == status && run.stdout == (status == 0 ? "Hello from FTP\n" : ""), "\(options) \(url): \(run.status) \(run.stderr)")
        }
    }

    @Test("--tls-max below TLS 1.2, or not a version, is a usage error (2); below --tlsv1.3 it fails each TLS transfer (35), as curl, and no other")
    func usage() async throws {
        for options in [["--tls-max", "1.1"], ["--tls-max", "2"]] {
            let run = try await LoadURLProcess.run(["-sS"] + options + ["https://localhost:1/"])
            #expect(run.status == 2 && run.stderr.contains("--tls-max"), "\(options): \(run.status) \(run.stderr)")
        }
        let nginx = try TestServers.requireNginx()
        let none = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "--tlsv1.3", "--tls-max", "1.2", "https://localhost:\(nginx.httpsPort)/hello.txt"])
        #expect(none.status == 35 && none.stderr.contains("no TLS version"), "\(none.status) \(none.stderr)")
        let plain = try await LoadURLProcess.run(["-sS", "--tlsv1.3", "--tls-max", "1.2", "http://127.0.0.1:\(nginx.httpPort)/hello.txt"])
        #expect(plain.status == 0 && plain.stdout == "Hello from nginx\n", "\(plain.status) \(plain.stderr)")
    }
}
