import Foundation
import Loader
import TestSupport
import Testing

/// `loadurl` against the real nginx, with curl's HTTP options.
@Suite("loadurl: http(s) options against nginx")
struct CLIHTTPTests {
    @Test("-I prints the status line and fields only, with -X GET too")
    func head() async throws {
        let server = try TestServers.requireNginx()
        let run = try await LoadURLProcess.run(["-I", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(run.stdout.contains("Content-Length: 17\r\n"))
        #expect(run.stdout.hasSuffix("\r\n\r\n"))
        // With -X GET the request is a GET, and still only its head is written, as curl's.
        let get = try await LoadURLProcess.run(["-I", "-X", "GET", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(get.status == 0 && get.stdout.hasPrefix("HTTP/1.1 200 OK\r\n") && get.stdout.hasSuffix("\r\n\r\n"), "\(get.stdout)")
    }

    @Test("-u USER without a password asks for it on standard error and reads it from the terminal, unechoed, or from standard input without one, as curl does")
    func passwordPrompt() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/private"
        // On script's terminal, standard error and output both come out of it.
        let typed = try await LoadURLProcess.run(["-sS", "-f", "-u", "user", url], input: Data("secret\n".utf8), terminal: .own)
        #expect(typed.status == 0 && typed.stdout.contains("Enter host password for user 'user':"), "\(typed.stdout) \(typed.stderr)")
        #expect(typed.stdout.hasSuffix("Hello from nginx\r\n"), "\(typed.stdout)")
        // No terminal (a job, a pipe into it): the answer is standard input's first line; an empty one is refused.
        let piped = try await LoadURLProcess.run(["-sS", "-f", "-u", "user", url], input: Data("secret\n".utf8), terminal: .none)
        #expect(piped.status == 0 && piped.stdout == "Hello from nginx\n", "\(piped.stdout) \(piped.stderr)")
        #expect(piped.stderr.contains("Enter host password for user 'user':"), "\(piped.stderr)")
        let empty = try await LoadURLProcess.run(["-sS", "-f", "-u", "user", url], terminal: .none)
        #expect(empty.status == 22, "\(empty.stdout) \(empty.stderr)")
        // With --oauth2-bearer the token is the credential: nothing is asked.
        let bearer = try await LoadURLProcess.run(["-sS", "-u", "user", "--oauth2-bearer", "t", url], terminal: .none)
        #expect(!bearer.stderr.contains("Enter"), "\(bearer.stderr)")
    }

    @Test("A server that closes the connection without a response exits 52, curl's empty reply, naming the URL")
    func emptyReply() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/empty-reply"
        let run = try await LoadURLProcess.run(["-sS", url])
        #expect(run.status == 52 && run.stdout.isEmpty, "\(run.stderr)")
        #expect(run.stderr.contains(url) && run.stderr.contains("without a response"), "\(run.stderr)")
    }

    @Test("A typed URL's escapes go to the server as typed beside characters that need encoding (%41 stays, | becomes %7C), as curl sends them")
    func escapesKept() async throws {
        let server = try TestServers.requireNginx()
        let run = try await LoadURLProcess.run(["-sS", "http://127.0.0.1:\(server.httpPort)/request-line?a=x|y&b=%41&c=%zz"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "uri=/request-line?a=x%7Cy&b=%41&c=%25zz proxy-authorization=\n", "\(run.stdout)")
    }

    @Test("A URL without a scheme is loaded as http://, as curl guesses; a scheme the loader lacks fails as unsupported")
    func schemelessURL() async throws {
        let server = try TestServers.requireNginx()
        let run = try await LoadURLProcess.run(["-sS", "127.0.0.1:\(server.httpPort)/hello.txt", "localhost:\(server.httpPort)/hello.txt"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "Hello from nginx\nHello from nginx\n")
        let unknown = try await LoadURLProcess.run(["-sS", "gopher://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(unknown.status == 1, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("gopher://127.0.0.1"), "\(unknown.stderr)")
    }

    @Test("A body that fills the disk exits 23 (curl's write error), naming the URL and the cause")
    func fullDisk() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/1m.bin"
        try await TestServers.withFullDisk { folder in
            let run = try await LoadURLProcess.run(["-sS", "-o", folder.appendingPathComponent("out.bin").path, url])
            #expect(run.status == 23, "\(run.stderr)")
            #expect(run.stderr.contains(url), "\(run.stderr)")
            #expect(run.stderr.contains("No space left on device"), "\(run.stderr)")
        }
        // And to /dev/full, a device that is always full.
        let device = try await LoadURLProcess.run(["-sS", "-o", "/dev/full", url])
        #expect(device.status == 23, "\(device.stderr)")
        #expect(device.stderr.contains("No space left on device"), "\(device.stderr)")
    }

    @Test("Redirects are followed only with -L, as curl does")
    func location() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/redirect"
        let plain = try await LoadURLProcess.run(["-w", "%{http_code}", "-o", "/dev/null", url])
        #expect(plain.stdout == "301")
        let followed = try await LoadURLProcess.run(["-L", url])
        #expect(followed.stdout == "Hello from nginx\n")
        let limited = try await LoadURLProcess.run(["-L", "--max-redirs", "3", "http://127.0.0.1:\(server.httpPort)/loop"])
        #expect(limited.status == 47)
        // With -i, the heads that came are written before the failure, as curl writes them as they come: four 302s.
        let heads = try await LoadURLProcess.run(["-s", "-i", "-L", "--max-redirs", "3", "http://127.0.0.1:\(server.httpPort)/loop"])
        #expect(heads.status == 47 && heads.stdout.components(separatedBy: "HTTP/1.1 302 ").count == 5, "\(heads.stdout)")
        let none = try await LoadURLProcess.run(["-L", "--max-redirs", "0", "-o", "/dev/null", "-w", "%{http_code} %{url_effective}", url])
        #expect(none.status == 47, "\(none.stderr)")
        // The redirect not followed is the last response, as curl's -w shows it (000 before).
        #expect(none.stdout == "301 \(url)", "\(none.stdout)")
        let unlimited = try await LoadURLProcess.run(["-L", "--max-redirs", "-1", url])
        #expect(unlimited.status == 0 && unlimited.stdout == "Hello from nginx\n", "\(unlimited.stderr)")
    }

    @Test("-i and -I with -L print every response's head in order, the redirect's first, as curl does")
    func includeEveryHead() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/redirect"
        for option in ["-i", "-I"] {
            let run = try await LoadURLProcess.run([option, "-L", url])
            #expect(run.status == 0, "\(run.stderr)")
            let heads = run.stdout.components(separatedBy: "\r\n\r\n")
            #expect(heads.count == 3 && heads[0].hasPrefix("HTTP/1.1 301 ") && heads[0].contains("Location: ")
                    && heads[1].hasPrefix("HTTP/1.1 200 OK\r\n"), "\(option): \(run.stdout)")
            #expect(heads.last == (option == "-i" ? "Hello from nginx\n" : ""), "\(option): \(run.stdout)")
        }
        // Without -L, the one response's head.
        let one = try await LoadURLProcess.run(["-I", url])
        #expect(one.stdout.hasPrefix("HTTP/1.1 301 ") && one.stdout.components(separatedBy: "HTTP/1.1").count == 2, "\(one.stdout)")
    }

    @Test("--compressed asks for gzip and zstd and writes the body decoded, under the head as sent (-i), a gzip asked for by -H too; without it, as sent; an unknown coding is 61")
    func compressed() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/gz/lines.txt"
        let original = try String(contentsOfFile: server.root + "/gz/lines.txt", encoding: .utf8)
        let decoded = try await LoadURLProcess.run(["--compressed", "-i", url])
        #expect(decoded.status == 0)
        #expect(decoded.stdout.hasSuffix("\r\n\r\n" + original))
        // The head as the server sent it, as curl prints it: the body below it is decoded.
        #expect(decoded.stdout.contains("Content-Encoding: gzip\r\n"), "\(decoded.stdout.prefix(400))")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gz-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let raw = try await LoadURLProcess.run(["-H", "Accept-Encoding: gzip", "-o", file.path, url])
        #expect(raw.status == 0)
        let gzip = try Data(contentsOf: file)
        #expect(gzip.prefix(2) == Data([0x1F, 0x8B]), "the gzip stream, byte for byte")
        // %{size_download} counts the bytes that came, as curl's: the gzip stream's, not the text decoded from it.
        let counted = try await LoadURLProcess.run(["--compressed", "-o", "/dev/null", "-w", "%{size_download}", url])
        #expect(counted.status == 0 && counted.stdout == String(gzip.count) && gzip.count < original.utf8.count, "\(counted.stdout)")
        // With --compressed, a gzip asked for by -H is decoded too, as curl's is.
        let asked = try await LoadURLProcess.run(["--compressed", "-H", "Accept-Encoding: gzip", url])
        #expect(asked.status == 0 && asked.stdout == original, "\(asked.stdout.prefix(40))")
        // A coding no one here decodes: curl's 61, naming it, and nothing written; without --compressed, the bytes as sent.
        let compress = "http://127.0.0.1:\(server.httpPort)/compress-coded"
        let unknown = try await LoadURLProcess.run(["--compressed", compress])
        #expect(unknown.status == 61 && unknown.stdout.isEmpty, "\(unknown.status) \(unknown.stdout)")
        #expect(unknown.stderr.contains("unrecognized content encoding 'compress'"), "\(unknown.stderr)")
        let plain = try await LoadURLProcess.run([compress])
        #expect(plain.status == 0 && plain.stdout == "as sent\n")

        // nginx serves a file compressed now as zstd (its /zst/ location); -v shows what was asked for.
        let name = "lines-\(UUID().uuidString).txt"
        let zstdFile = URL(fileURLWithPath: server.root + "/zst/" + name)
        try Compression.zstd(Data(original.utf8)).write(to: zstdFile)
        defer { try? FileManager.default.removeItem(at: zstdFile) }
        let zstd = try await LoadURLProcess.run(["-v", "--compressed", "http://127.0.0.1:\(server.httpPort)/zst/\(name)"])
        #expect(zstd.status == 0 && zstd.stdout == original, "\(zstd.stderr)")
        #expect(zstd.stderr.contains("> Accept-Encoding: gzip, deflate, br, zstd"), "\(zstd.stderr)")
    }

    @Test("-f makes an HTTP error status exit 22 without printing the body; -w %{errormsg} says so in curl's words")
    func failOnError() async throws {
        let server = try TestServers.requireNginx()
        let run = try await LoadURLProcess.run(["-f", "http://127.0.0.1:\(server.httpPort)/status/404"])
        #expect(run.status == 22)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("404"))
        // -w's %{errormsg} in curl's words.
        let told = try await LoadURLProcess.run(["-sf", "-w", "%{exitcode} %{errormsg}", "http://127.0.0.1:\(server.httpPort)/status/404"])
        #expect(told.stdout == "22 The requested URL returned error: 404", "\(told.stdout)")
        // With -i or -I the head is written first, as curl writes heads as they come; the body is not.
        for flag in ["-i", "-I"] {
            let head = try await LoadURLProcess.run(["-sf", flag, "http://127.0.0.1:\(server.httpPort)/status/404"])
            #expect(head.status == 22, "\(flag): \(head.stderr)")
            #expect(head.stdout.hasPrefix("HTTP/1.1 404 Not Found\r\n") && head.stdout.hasSuffix("\r\n\r\n"), "\(flag): \(head.stdout)")
        }
    }

    @Test("HTTPS: --cacert trusts the test CA; without it exit 60; -k skips verification with a warning")
    func tls() async throws {
        let server = try TestServers.requireNginx()
        let url = "https://localhost:\(server.httpsPort)/hello.txt"
        let trusted = try await LoadURLProcess.run(["--cacert", server.caFile, url])
        #expect(trusted.status == 0)
        #expect(trusted.stdout == "Hello from nginx\n")
        let untrusted = try await LoadURLProcess.run([url])
        #expect(untrusted.status == 60)
        #expect(untrusted.stderr.contains(url))
        let insecure = try await LoadURLProcess.run(["-k", url])
        #expect(insecure.status == 0)
        #expect(insecure.stderr.contains("warning"))
    }

    @Test("-E/--cert and --key show a client certificate; FILE:PASSPHRASE and --pass open an encrypted key; a key that cannot be read exits 58, a server's refusal 56")
    func clientCertificate() async throws {
        let server = try TestServers.requireNginx()
        let tls = try #require(TestServers.mutualTLS, "the mutual-TLS servers could not be started by scripts/test-servers")
        let url = "https://localhost:\(tls.port)/"
        let shown = try await LoadURLProcess.run(["--cacert", server.caFile, "-E", tls.certificate, "--key", tls.key, url])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("CN=loader test client"))
        let colon = try await LoadURLProcess.run(["--cacert", server.caFile, "--cert", "\(tls.certificate):\(tls.passphrase)", "--key", tls.encryptedKey, url])
        #expect(colon.stdout.contains("verify=SUCCESS"), "\(colon.stderr)")
        let pass = try await LoadURLProcess.run(["--cacert", server.caFile, "-E", tls.certificate, "--key", tls.encryptedKey, "--pass", tls.passphrase, url])
        #expect(pass.stdout.contains("verify=SUCCESS"), "\(pass.stderr)")
        let passWins = try await LoadURLProcess.run(["--cacert", server.caFile, "-E", "\(tls.certificate):wrong", "--key", tls.encryptedKey,
                                                     "--pass", tls.passphrase, url])
        #expect(passWins.stdout.contains("verify=SUCCESS"), "--pass is the passphrase, and -E's file is before the colon: \(passWins.stderr)")
        let locked = try await LoadURLProcess.run(["--cacert", server.caFile, "-E", tls.certificate, "--key", tls.encryptedKey, url])
        #expect(locked.status == 58, "\(locked.stderr)")
        #expect(locked.stderr.contains(tls.encryptedKey))
        let refused = try await LoadURLProcess.run(["--cacert", server.caFile, "https://localhost:\(tls.strictPort)/"])
        #expect(refused.status == 56, "\(refused.stderr)")
        #expect(refused.stderr.contains("client certificate"))
        let keyAlone = try await LoadURLProcess.run(["--cacert", server.caFile, "--key", tls.key, url])
        #expect(keyAlone.status == 2, "--key without --cert is a usage error: \(keyAlone.stderr)")
        // A failure after a passphrase was given (a key that is not the certificate's) never shows it.
        let secret = "do-not-print-\(UUID().uuidString)"
        let mismatched = try await LoadURLProcess.run(["--cacert", server.caFile, "-E", "\(tls.certificate):\(secret)", "--key", tls.strangerKey, url])
        #expect(mismatched.status == 58, "\(mismatched.stderr)")
        #expect(!mismatched.stderr.contains(secret))
    }

    @Test("--resolve sends a host name to another address; the certificate is checked against the name")
    func resolve() async throws {
        let server = try TestServers.requireNginx()
        let run = try await LoadURLProcess.run([
            "--cacert", server.caFile, "--resolve", "wrong.example:\(server.httpsPort):127.0.0.1",
            "https://wrong.example:\(server.httpsPort)/hello.txt",
        ])
        #expect(run.status == 60)
        #expect(run.stderr.contains("does not match"))
    }

    @Test("--connect-to sends a HOST:PORT's connections to another (any part may be empty); Host, SNI and the certificate check keep the URL's host; a malformed one is a usage error")
    func connectTo() async throws {
        let server = try TestServers.requireNginx()
        let moved = try await LoadURLProcess.run(["-sS", "-v", "--connect-to", "nowhere.test:80:127.0.0.1:\(server.httpPort)",
                                                  "http://nowhere.test/hello.txt"])
        #expect(moved.status == 0 && moved.stdout == "Hello from nginx\n", "\(moved.stderr)")
        #expect(moved.stderr.contains("> Host: nowhere.test\r\n") || moved.stderr.contains("> Host: nowhere.test\n"), "\(moved.stderr)")
        // Any host and port, to the server's port on the same host name (an empty HOST2).
        let wildcard = try await LoadURLProcess.run(["-sS", "--connect-to", "::127.0.0.1:\(server.httpPort)", "http://other.test:1/hello.txt"])
        #expect(wildcard.status == 0 && wildcard.stdout == "Hello from nginx\n", "\(wildcard.stderr)")
        let samehost = try await LoadURLProcess.run(["-sS", "--connect-to", "127.0.0.1:1::\(server.httpPort)", "http://127.0.0.1:1/hello.txt"])
        #expect(samehost.status == 0 && samehost.stdout == "Hello from nginx\n", "\(samehost.stderr)")
        // TLS: the certificate is checked against the URL's host, wherever the connection goes.
        let trusted = try await LoadURLProcess.run(["-sS", "--cacert", server.caFile, "--connect-to", "localhost:443:127.0.0.1:\(server.httpsPort)",
                                                    "https://localhost/hello.txt"])
        #expect(trusted.status == 0 && trusted.stdout == "Hello from nginx\n", "\(trusted.stderr)")
        let mismatched = try await LoadURLProcess.run(["-sS", "--cacert", server.caFile, "--connect-to", "wrong.example:443:localhost:\(server.httpsPort)",
                                                       "https://wrong.example/hello.txt"])
        #expect(mismatched.status == 60, "\(mismatched.stderr)")
        let malformed = try await LoadURLProcess.run(["-sS", "--connect-to", "a:b:c:d", "http://127.0.0.1:1/"])
        #expect(malformed.status == 2 && malformed.stderr.contains("--connect-to"), "\(malformed.stderr)")
    }

    @Test("--unix-socket sends HTTP and HTTPS to nginx's sockets with the URL's host; -v names the socket; a missing one exits 7 naming it")
    func unixSocket() async throws {
        let server = try TestServers.requireNginx()
        let plain = try await LoadURLProcess.run(["-sS", "--unix-socket", server.unixSocket, "http://site.invalid/host"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == "host=site.invalid\n")
        let secure = try await LoadURLProcess.run(["-v", "--cacert", server.caFile, "--unix-socket", server.tlsUnixSocket, "https://localhost/hello.txt"])
        #expect(secure.status == 0, "\(secure.stderr)")
        #expect(secure.stdout == "Hello from nginx\n")
        #expect(secure.stderr.contains("* Connected to localhost (\(server.tlsUnixSocket))\n"), "\(secure.stderr)")
        let gone = server.unixSocket + ".gone"
        let missing = try await LoadURLProcess.run(["-sS", "--unix-socket", gone, "http://localhost/hello.txt"])
        #expect(missing.status == 7)
        #expect(missing.stderr.contains(gone), "\(missing.stderr)")
    }

    @Test("-4 and -6 choose the IP version a name resolves to (the last given wins); an address of the other one exits 6")
    func ipVersion() async throws {
        let server = try TestServers.requireNginx()
        let format = ["-sS", "-w", " %{remote_ip}"]
        let four = try await LoadURLProcess.run(format + ["-6", "-4", "http://localhost:\(server.httpPort)/hello.txt"])
        #expect(four.status == 0, "\(four.stderr)")
        #expect(four.stdout == "Hello from nginx\n 127.0.0.1")
        let wrong = try await LoadURLProcess.run(format + ["-6", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(wrong.status == 6, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("IPv6"), "\(wrong.stderr)")
        // scripts/test-servers listens on [::1] wherever the kernel has IPv6 loopback; this machine must.
        try #require(server.ipv6, "nginx has no [::1] listener: this machine has no IPv6 loopback")
        let six = try await LoadURLProcess.run(format + ["-4", "-6", "http://[::1]:\(server.httpPort)/hello.txt"])
        #expect(six.status == 0, "\(six.stderr)")
        #expect(six.stdout == "Hello from nginx\n ::1")
        let refused = try await LoadURLProcess.run(format + ["-4", "http://[::1]:\(server.httpPort)/hello.txt"])
        #expect(refused.status == 6, "\(refused.stderr)")
    }

    @Test("-L drops -u's and -H's Authorization at a redirect to another host; --location-trusted keeps it, and follows without -L")
    func locationTrusted() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/to-localhost"
        let dropped = try await LoadURLProcess.run(["-sS", "-L", "-u", "user:secret", url])
        #expect(dropped.status == 0, "\(dropped.stderr)")
        #expect(dropped.stdout == "authorization=\n")
        let kept = try await LoadURLProcess.run(["-sS", "--location-trusted", "-u", "user:secret", url])
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stdout == "authorization=Basic dXNlcjpzZWNyZXQ=\n")
        let header = try await LoadURLProcess.run(["-sS", "--location-trusted", "-H", "Authorization: Bearer t0ken", url])
        #expect(header.stdout == "authorization=Bearer t0ken\n", "\(header.stderr)")
    }

    @Test("-w's sizes and the redirect time: %{size_header} is every head's bytes (what -D writes), %{size_upload} the body's; an unknown variable is warned of; \\\\ prints as written")
    func writeOutSizes() async throws {
        let server = try TestServers.requireNginx()
        try await withTemporaryFolder("cli-writeout-sizes") { folder in
            let heads = folder.appendingPathComponent("heads").path
            let base = "http://127.0.0.1:\(server.httpPort)"
            let format = "%{size_header}|%{size_request}|%{size_upload}|%{time_redirect}|%{time_namelookup}|%{nope}|a\\\\b\\n"
            let followed = try await LoadURLProcess.run(["-s", "-L", "-D", heads, "-o", "/dev/null", "-w", format, base + "/redirect"])
            #expect(followed.status == 0, "\(followed.stderr)")
            let fields = followed.stdout.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            try #require(fields.count == 7, "\(followed.stdout)")
            let dumped = try FileManager.default.attributesOfItem(atPath: heads)[.size] as? Int
            #expect(Int(fields[0]) == dumped && (dumped ?? 0) > 100, "\(fields[0]) against -D's \(String(describing: dumped))")
            // Two GETs: request lines and fields, no body.
            #expect((Int(fields[1]) ?? 0) > 2 * "GET /hello.txt HTTP/1.1\r\n\r\n".utf8.count && fields[2] == "0", "\(followed.stdout)")
            #expect((Double(fields[3]) ?? 0) > 0 && Double(fields[4]) != nil, "\(followed.stdout)")
            #expect(fields[5].isEmpty && fields[6] == "a\\\\b\n", "\(followed.stdout)")
            #expect(followed.stderr.contains("unknown --write-out variable: 'nope'"), "\(followed.stderr)")
            let posted = try await LoadURLProcess.run(["-s", "-d", "abc=1", "-o", "/dev/null", "-w", "%{size_upload}|%{time_redirect}|%{speed_upload}", base + "/echo"])
            let sizes = posted.stdout.split(separator: "|").map(String.init)
            // The speed, bytes per second over the whole transfer, only as a number: 5 bytes make 0 after 5 s.
            #expect(posted.status == 0 && sizes.count == 3 && sizes[0] == "5" && sizes[1] == "0.000000" && Int(sizes[2]) != nil,
                    "\(posted.stdout) \(posted.stderr)")
            #expect(posted.stderr.isEmpty, "\(posted.stderr)")
        }
    }

    @Test("-w's %{json} (valid JSON, numbers as numbers), %header{NAME}, %{num_headers}, %{urlnum}, %{method}, %{filename_effective} and %{redirect_url}")
    func writeOutVariables() async throws {
        let server = try TestServers.requireNginx()
        try await withTemporaryFolder("cli-writeout") { folder in
            let (first, second) = (folder.appendingPathComponent("one").path, folder.appendingPathComponent("two").path)
            let base = "http://127.0.0.1:\(server.httpPort)"
            let format = "%{json}\n%header{content-type}|%header{CONTENT-LENGTH}|%header{X-Absent}|%{num_headers}|%{urlnum}|%{method}|%{filename_effective}|%{redirect_url}\n"
            let run = try await LoadURLProcess.run(["-s", "-X", "GET", "-o", first, "-o", second, "-w", format, base + "/hello.txt", base + "/redirect"])
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            try #require(lines.count == 4, "\(run.stdout)")
            let fields = lines[1].split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            #expect(fields.count == 8 && (Int(fields[3]) ?? 0) >= 5, "\(lines[1])")
            #expect(fields.prefix(3) == ["text/plain", "17", ""] && fields.suffix(4) == ["0", "GET", first, ""], "\(lines[1])")
            #expect(lines[3].hasSuffix("|1|GET|\(second)|\(base)/hello.txt"), "\(lines[3])")
            for (index, line) in [lines[0], lines[2]].enumerated() {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                let json = try #require(object, "\(line)")
                #expect(json["urlnum"] as? Int == index, "\(line)")
                #expect(json["http_code"] as? Int == (index == 0 ? 200 : 301), "\(line)")
                #expect(json["method"] as? String == "GET" && json["remote_ip"] as? String == "127.0.0.1", "\(line)")
                #expect(json["filename_effective"] as? String == (index == 0 ? first : second), "\(line)")
                #expect((json["time_total"] as? Double).map { $0 > 0 } == true && json["exitcode"] as? Int == 0, "\(line)")
                #expect(json["url"] as? String == base + (index == 0 ? "/hello.txt" : "/redirect"), "\(line)")
            }
        }
    }

    @Test("-OJ saves under the name Content-Disposition gives, its last part only, never over a file already there (23); -J with -C is a usage error")
    func remoteHeaderName() async throws {
        let server = try TestServers.requireNginx()
        let base = "http://127.0.0.1:\(server.httpPort)"
        try await withTemporaryFolder("cli-header-name") { folder in
            let run = try await LoadURLProcess.run(["-sS", "-J", "-O", "-O", "--output-dir", folder.path, "-w", "%{filename_effective}\n",
                                                   base + "/named", base + "/named-away"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "\(folder.path)/named file.txt\n\(folder.path)/away.txt\n")
            for name in ["named file.txt", "away.txt"] {
                let saved = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
                #expect(saved == "Hello from nginx\n", "\(name)")
            }
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("named").path))
            // Again: the named file is there, and stays as it is.
            try Data("mine\n".utf8).write(to: folder.appendingPathComponent("named file.txt"))
            let again = try await LoadURLProcess.run(["-sS", "-OJ", "--output-dir", folder.path, base + "/named"])
            #expect(again.status == 23, "\(again.stderr)")
            #expect(again.stderr.contains("exists already"), "\(again.stderr)")
            #expect(try String(contentsOf: folder.appendingPathComponent("named file.txt"), encoding: .utf8) == "mine\n")
            // Without -J, -O takes the URL's name.
            let plain = try await LoadURLProcess.run(["-sS", "-O", "--output-dir", folder.path, base + "/named"])
            #expect(plain.status == 0 && FileManager.default.fileExists(atPath: folder.appendingPathComponent("named").path), "\(plain.stderr)")
        }
        let refused = try await LoadURLProcess.run(["-OJ", "-C", "-", base + "/named"])
        #expect(refused.status == 2, "\(refused.stderr)")
    }

    @Test("-w %{json} is valid JSON when no HTTP response came (http_code 0, not 000)")
    func writeOutJSONWithoutResponse() async throws {
        let run = try await LoadURLProcess.run(["-s", "-o", "/dev/null", "-w", "%{json}", "data:,x"])
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(object?["http_code"] as? Int == 0, "\(run.stdout)")
        #expect(object?["filename_effective"] as? String == "/dev/null", "\(run.stdout)")
    }

    @Test("--limit-rate holds each body to its average: no faster than the limit, whole; a value that is no size is a usage error")
    func limitRate() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/1m.bin"
        let run = try await LoadURLProcess.run(["-sS", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{size_download} %{speed_download}\n", "--limit-rate", "1M", url, url])
        #expect(run.status == 0, "\(run.stderr)")
        // Each transfer's own average (a pause follows every chunk, the last too), counted over its whole time.
        let figures = run.stdout.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        #expect(figures.count == 4, "\(run.stdout)")
        for pair in stride(from: 0, to: figures.count - 1, by: 2) {
            #expect(figures[pair] == 1_048_576)
            #expect(figures[pair + 1] <= 1024 * 1024, "\(figures[pair + 1]) bytes per second")
        }
        // -m holds however slowly the limit reads: 1 MiB at 20 KiB/s would take 50 s (the whole body sits in the loader's
        // buffer long before, where its own timeout no longer looks), as curl's -m does.
        let bounded = try await LoadURLProcess.run(["-sS", "-m", "1", "--limit-rate", "20K", "-o", "/dev/null", url])
        #expect(bounded.status == 28 && bounded.stderr.contains("timed out"), "\(bounded.status): \(bounded.stderr)")
        for bad in ["fast", "-1", "1T"] {
            let refused = try await LoadURLProcess.run(["--limit-rate", bad, url])
            #expect(refused.status == 2 && refused.stderr.contains("--limit-rate"), "\(bad): \(refused.stderr)")
        }
    }

    @Test("-X sends its method as given (methods are case-sensitive, and curl does not change them); one that is no token is a usage error")
    func methodAsGiven() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/hello.txt"
        let run = try await LoadURLProcess.run(["-sS", "-v", "-X", "patch", "-o", "/dev/null", url])
        #expect(run.stderr.contains("> patch /hello.txt HTTP/1.1"), "\(run.stderr)")
        let bad = try await LoadURLProcess.run(["-sS", "-X", "BAD METHOD", url])
        #expect(bad.status == 2 && bad.stderr.contains("-X wants a request method"), "\(bad.status): \(bad.stderr)")
    }

    @Test("-u sends Basic credentials; -d posts a form")
    func credentialsAndData() async throws {
        let server = try TestServers.requireNginx()
        let denied = try await LoadURLProcess.run(["-w", "%{http_code}", "-o", "/dev/null", "http://127.0.0.1:\(server.httpPort)/private"])
        #expect(denied.stdout == "401")
        let allowed = try await LoadURLProcess.run(["-u", "user:secret", "http://127.0.0.1:\(server.httpPort)/private"])
        #expect(allowed.stdout == "Hello from nginx\n")
        let posted = try await LoadURLProcess.run(["-d", "a=1&b=2", "http://127.0.0.1:\(server.httpPort)/echo"])
        #expect(posted.stdout.hasPrefix("method=POST length=7"))
    }

    @Test("A URL's user and password go ahead as Basic, percent-decoded, as curl sends them (not only after a challenge); -u wins over them; --digest sends none ahead; another origin gets none")
    func urlCredentialsAhead() async throws {
        let server = try TestServers.requireNginx()
        let port = server.httpPort
        func basic(_ pair: String) -> String { "authorization=Basic \(Data(pair.utf8).base64EncodedString())\n" }
        // /authorization answers 200 without asking: what the first request carried is what it echoes.
        let ahead = try await LoadURLProcess.run(["-sS", "http://us%40er:p%3Ass@127.0.0.1:\(port)/authorization"])
        #expect(ahead.stdout == basic("us@er:p:ss"), "\(ahead.stdout) \(ahead.stderr)")
        let overridden = try await LoadURLProcess.run(["-sS", "-u", "other:pw", "http://user:secret@127.0.0.1:\(port)/authorization"])
        #expect(overridden.stdout == basic("other:pw"))
        let digest = try await LoadURLProcess.run(["-sS", "--digest", "http://user:secret@127.0.0.1:\(port)/authorization"])
        #expect(digest.stdout == "authorization=\n")
        // Redirected to localhost, another origin: dropped, as -u's is.
        let moved = try await LoadURLProcess.run(["-sS", "-L", "http://user:secret@127.0.0.1:\(port)/to-localhost"])
        #expect(moved.stdout == "authorization=\n", "\(moved.stdout) \(moved.stderr)")
    }

    @Test("-X's method goes with every redirect's request, as curl's: -X POST stays a POST after 301, 302 and 303 (without its body), -X DELETE a DELETE after a 303")
    func customMethodKeptOnRedirect() async throws {
        let server = try TestServers.requireNginx()
        let base = "http://127.0.0.1:\(server.httpPort)"
        for code in [301, 302, 303] {
            let post = try await LoadURLProcess.run(["-sS", "-L", "-X", "POST", "-d", "abc", "\(base)/to-echo-\(code)"])
            #expect(post.status == 0 && post.stdout.hasPrefix("method=POST ") && post.stdout.hasSuffix("body="), "\(code): \(post.stdout) \(post.stderr)")
        }
        let delete = try await LoadURLProcess.run(["-sS", "-L", "-X", "DELETE", "\(base)/to-echo-303"])
        #expect(delete.stdout.hasPrefix("method=DELETE "), "\(delete.stdout) \(delete.stderr)")
        // Without -X the session's rules hold: a POST becomes a GET after a 302.
        let plain = try await LoadURLProcess.run(["-sS", "-L", "-d", "abc", "\(base)/to-echo-302"])
        #expect(plain.stdout.hasPrefix("method=GET "))
    }

    @Test("--digest answers lighttpd's Digest challenge with -u's credentials and never sends Basic; --anyauth answers either; a wrong password gives the 401")
    func digest() async throws {
        let nginx = try TestServers.requireNginx()
        let port = try #require(TestServers.lighttpd, "lighttpd could not be started by scripts/test-servers").digestPort
        let protected = "http://127.0.0.1:\(port)/digest-sha256/hello.txt"
        let digest = try await LoadURLProcess.run(["-u", "user:secret", "--digest", protected])
        #expect(digest.status == 0, "\(digest.stderr)")
        #expect(digest.stdout == "Hello from lighttpd\n")
        // Without --digest, -u sends Basic, which a Digest location refuses.
        let basic = try await LoadURLProcess.run(["-w", "%{http_code}", "-o", "/dev/null", "-u", "user:secret", protected])
        #expect(basic.stdout == "401")
        // Basic asked for: --digest does not send the password in the clear, --anyauth does (the last flag wins).
        let basicOnly = "http://127.0.0.1:\(nginx.httpPort)/private"
        let refused = try await LoadURLProcess.run(["-w", "%{http_code}", "-o", "/dev/null", "-u", "user:secret", "--anyauth", "--digest", basicOnly])
        #expect(refused.stdout == "401")
        let either = try await LoadURLProcess.run(["-u", "user:secret", "--digest", "--anyauth", basicOnly, protected])
        #expect(either.stdout == "Hello from nginx\nHello from lighttpd\n", "\(either.stderr)")
        let wrong = try await LoadURLProcess.run(["-w", "%{http_code}", "-o", "/dev/null", "-u", "user:nope", "--digest", protected])
        #expect(wrong.stdout == "401")
        // The URL's user info under --digest: Digest answered, Basic not.
        let fromURL = try await LoadURLProcess.run(["-s", "-w", "%{http_code}\n", "-o", "/dev/null", "-o", "/dev/null", "--digest",
                                                    "http://user:secret@127.0.0.1:\(port)/digest/hello.txt",
                                                    "http://user:secret@127.0.0.1:\(nginx.httpPort)/private"])
        #expect(fromURL.stdout == "200\n401\n")
        // A redirect to another port of the same host takes no credentials there (curl keeps them to the origin too).
        let redirected = try await LoadURLProcess.run(["-L", "-w", "%{http_code}", "-o", "/dev/null", "-u", "user:secret", "--anyauth",
                                                       "http://127.0.0.1:\(nginx.httpPort)/to-digest"])
        #expect(redirected.stdout == "401")
    }

    @Test("HTTP/2: https offers it and -i prints \"HTTP/2 200\" as curl does; --http1.1 keeps to HTTP/1.1, the last of --http1.1 and --http2 wins; -w %{http_version}")
    func http2() async throws {
        let server = try TestServers.requireNginx()
        let url = "https://localhost:\(server.h2Port)/hello.txt"
        let negotiated = try await LoadURLProcess.run(["-i", "--cacert", server.caFile, url])
        #expect(negotiated.status == 0, "\(negotiated.stderr)")
        #expect(negotiated.stdout.hasPrefix("HTTP/2 200 \r\n"), "\(negotiated.stdout)")
        #expect(negotiated.stdout.hasSuffix("\r\n\r\nHello from nginx\n"))
        let versions = try await LoadURLProcess.run(["-s", "-w", "%{http_version}\n", "--cacert", server.caFile, url,
                                                     "--http1.1", url, "https://localhost:\(server.httpsPort)/hello.txt",
                                                     "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        // --http1.1 holds for every URL of the command, as curl's options do.
        #expect(versions.stdout == String(repeating: "Hello from nginx\n1.1\n", count: 4), "\(versions.stdout)")
        let last = try await LoadURLProcess.run(["-s", "-o", "/dev/null", "-w", "%{http_version}", "--http1.1", "--http2", "--cacert", server.caFile, url])
        #expect(last.stdout == "2")
        let plain = try await LoadURLProcess.run(["-s", "-o", "/dev/null", "-w", "%{http_version}", "--cacert", server.caFile, url])
        #expect(plain.stdout == "2")
        let failed = try await LoadURLProcess.run(["-s", "-w", "%{http_version}", "http://127.0.0.1:1/"])
        #expect(failed.stdout == "0")
    }

    @Test("--post301, --post302 and --post303 keep a POST and its body after that status alone; without them -L makes it a GET")
    func postAfterRedirect() async throws {
        let server = try TestServers.requireNginx()
        let base = "http://127.0.0.1:\(server.httpPort)"
        for code in [301, 302, 303] {
            let kept = try await LoadURLProcess.run(["-sS", "-L", "-d", "abc", "--post\(code)", "\(base)/to-echo-\(code)"])
            #expect(kept.status == 0 && kept.stdout == "method=POST length=3 body=", "\(code): \(kept.stdout) \(kept.stderr)")
            let changed = try await LoadURLProcess.run(["-sS", "-L", "-d", "abc", "\(base)/to-echo-\(code)"])
            #expect(changed.stdout == "method=GET length= body=", "\(code): \(changed.stdout)")
            // Another status's option does not hold for this one.
            let other = try await LoadURLProcess.run(["-sS", "-L", "-d", "abc", "--post\(code == 301 ? 302 : 301)", "\(base)/to-echo-\(code)"])
            #expect(other.stdout == "method=GET length= body=", "\(code): \(other.stdout)")
        }
    }

    @Test("--http2-prior-knowledge speaks HTTP/2 to an http server from the first byte (nginx's h2c port); to an HTTP/1.1 server it fails (16, as curl) saying so")
    func http2PriorKnowledge() async throws {
        let server = try TestServers.requireNginx()
        let cleartext = "http://127.0.0.1:\(server.h2cPort)/hello.txt"
        let run = try await LoadURLProcess.run(["-sS", "-w", "%{http_version}\n", "--http2-prior-knowledge", cleartext, cleartext])
        #expect(run.status == 0 && run.stdout == String(repeating: "Hello from nginx\n2\n", count: 2), "\(run.stdout) \(run.stderr)")
        let refused = try await LoadURLProcess.run(["-sS", "--http2-prior-knowledge", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(refused.status == 16 && refused.stderr.contains("answered in HTTP/1"), "\(refused.stderr)")
        // The last of --http1.1 and --http2-prior-knowledge wins.
        let last = try await LoadURLProcess.run(["-s", "-w", "%{http_version}", "--http2-prior-knowledge", "--http1.1",
                                                 "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(last.stdout == "Hello from nginx\n1.1", "\(last.stdout)")
    }

    @Test("An HTTP/2 stream the server resets, before its response or in the middle of its body, exits 92 (as curl) naming the code")
    func http2StreamReset() async throws {
        let server = try ScriptedHTTP2Server()
        for path in ["/reset", "/reset-mid-body"] {
            let run = try await LoadURLProcess.run(["-sS", "--http2-prior-knowledge", "http://127.0.0.1:\(server.port)\(path)"])
            #expect(run.status == 92, "\(path): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains("HTTP/2 stream 1 was reset with INTERNAL_ERROR"), "\(path): \(run.stderr)")
            #expect(run.stdout.utf8.count <= 1000, "\(path)")
        }
    }

    @Test("-D FILE gets each response head of the transfers (a redirect's too), the body its output; -D - writes them before the body")
    func dumpHeader() async throws {
        let server = try TestServers.requireNginx()
        try await withTemporaryFolder("cli-dump") { folder in
            let heads = folder.appendingPathComponent("heads.txt").path
            let run = try await LoadURLProcess.run(["-s", "-L", "-D", heads, "http://127.0.0.1:\(server.httpPort)/redirect",
                                                   "http://127.0.0.1:\(server.httpPort)/hello.txt"])
            #expect(run.status == 0 && run.stdout == "Hello from nginx\nHello from nginx\n", "\(run.stderr)")
            let written = try String(contentsOfFile: heads, encoding: .utf8)
            let statusLines = written.components(separatedBy: "\r\n").filter { $0.hasPrefix("HTTP/") }
            #expect(statusLines == ["HTTP/1.1 301 Moved Permanently", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK"], "\(written)")
            #expect(written.contains("Location: http://127.0.0.1:\(server.httpPort)/hello.txt\r\n"))
        }
        let toStdout = try await LoadURLProcess.run(["-s", "-D", "-", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(toStdout.stdout.hasPrefix("HTTP/1.1 200 OK\r\n") && toStdout.stdout.hasSuffix("\r\n\r\nHello from nginx\n"), "\(toStdout.stdout)")
        let unwritable = try await LoadURLProcess.run(["-sS", "-D", "/no/such/folder/heads", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(unwritable.status == 23 && unwritable.stderr.contains("-D"), "\(unwritable.stderr)")
        // A head that cannot be written (a full device) fails the transfer with 23, as curl's does.
        let full = try await LoadURLProcess.run(["-sS", "-D", "/dev/full", "-o", "/dev/null", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(full.status == 23 && full.stderr.contains("-D") && full.stderr.contains("No space left on device"), "\(full.stderr)")
        // With -f and a 404 too: the head that could not be written is told (23), not hidden behind the 22.
        let failing = try await LoadURLProcess.run(["-sSf", "-D", "/dev/full", "http://127.0.0.1:\(server.httpPort)/nope"])
        #expect(failing.status == 23 && failing.stderr.contains("No space left on device"), "\(failing.status): \(failing.stderr)")
    }

    @Test("--fail-with-body writes an error's body and exits 22; -f writes none")
    func failWithBody() async throws {
        let url = "http://127.0.0.1:\(try TestServers.requireNginx().httpPort)/status/404"
        let withBody = try await LoadURLProcess.run(["-sS", "--fail-with-body", url])
        #expect(withBody.status == 22 && withBody.stdout == "not here\n", "\(withBody.stderr)")
        #expect(withBody.stderr.contains("404"))
        let plain = try await LoadURLProcess.run(["-s", "-f", url])
        #expect(plain.status == 22 && plain.stdout.isEmpty)
        let fine = try await LoadURLProcess.run(["-s", "--fail-with-body", "http://127.0.0.1:\(try TestServers.requireNginx().httpPort)/hello.txt"])
        #expect(fine.status == 0 && fine.stdout == "Hello from nginx\n")
    }

    @Test("--remove-on-error removes the file a failed transfer wrote (--fail-with-body's 404 page); without it the file stays; a file the failed transfer never opened stays as it was")
    func removeOnError() async throws {
        let port = try TestServers.requireNginx().httpPort
        let folder = try scratchFolder("remove-on-error")
        defer { try? FileManager.default.removeItem(at: folder) }
        let page = folder.appendingPathComponent("page").path
        let removed = try await LoadURLProcess.run(["-s", "--fail-with-body", "--remove-on-error", "-o", page, "http://127.0.0.1:\(port)/status/404"])
        #expect(removed.status == 22 && !FileManager.default.fileExists(atPath: page), "\(removed.status) \(removed.stderr)")
        let kept = try await LoadURLProcess.run(["-s", "--fail-with-body", "-o", page, "http://127.0.0.1:\(port)/status/404"])
        #expect(kept.status == 22 && text(page) == "not here\n")
        // Refused before any response: the file there before is not this transfer's to remove.
        let refused = try await LoadURLProcess.run(["-s", "--remove-on-error", "-o", page, "http://127.0.0.1:\(LoopbackPorts.closed())/"])
        #expect(refused.status == 7 && text(page) == "not here\n", "\(refused.status)")
        // A transfer that succeeds keeps its file.
        let fine = try await LoadURLProcess.run(["-s", "--remove-on-error", "-o", page, "http://127.0.0.1:\(port)/hello.txt"])
        #expect(fine.status == 0 && text(page) == "Hello from nginx\n")
    }

    /// A new folder of the temporary directory, named after `name`; the caller removes it.
    private func scratchFolder(_ name: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The text of the file at `path`, `nil` if there is none.
    private func text(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    /// The value of the field `name` (lowercase) in the head `loadurl -I` prints for `url`.
    private func headField(_ name: String, of url: String) async throws -> String {
        let head = try await LoadURLProcess.run(["-sI", url])
        let line = try #require(head.stdout.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name + ": ") }, "no \(name) in \(head.stdout)")
        return String(line.dropFirst(name.count + 2))
    }

    @Test("-z asks If-Modified-Since (a date, or a file's time): a 304 writes nothing and leaves the output file as it was; -z -DATE asks If-Unmodified-Since; a time it cannot read is warned of and dropped")
    func timeCondition() async throws {
        let port = try TestServers.requireNginx().httpPort
        let url = "http://127.0.0.1:\(port)/hello.txt"
        let folder = try scratchFolder("time-cond")
        defer { try? FileManager.default.removeItem(at: folder) }
        // A copy kept from before, as a mirroring script keeps one: its time is the resource's.
        let copy = folder.appendingPathComponent("hello.txt").path
        try Data("kept copy\n".utf8).write(to: URL(fileURLWithPath: copy))
        let time = try #require(HTTPDate.parse(try await headField("last-modified", of: url)))
        try FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: copy)
        let unchanged = try await LoadURLProcess.run(["-sS", "-z", copy, "-o", copy, "-w", "%{http_code}", url])
        #expect(unchanged.status == 0 && unchanged.stdout == "304", "\(unchanged.stdout) \(unchanged.stderr)")
        #expect(text(copy) == "kept copy\n", "the kept copy was written over")
        // A date the resource changed after: it comes whole.
        let newer = try await LoadURLProcess.run(["-sS", "-z", "20 Jan 2000", "-w", " %{http_code}", url])
        #expect(newer.stdout == "Hello from nginx\n 200", "\(newer.stdout) \(newer.stderr)")
        let asked = try await LoadURLProcess.run(["-sS", "-v", "-z", "2000-01-20 10:00:00", "-o", "/dev/null", url])
        #expect(asked.stderr.contains("> If-Modified-Since: Thu, 20 Jan 2000 10:00:00 GMT"), "\(asked.stderr)")
        // -DATE: only if unmodified since then, which it was not: 412, an HTTP error under -f.
        let unmodified = try await LoadURLProcess.run(["-sf", "-z", "-20 Jan 2000", "-w", "%{http_code}", url])
        #expect(unmodified.status == 22 && unmodified.stdout == "412", "\(unmodified.status) \(unmodified.stdout)")
        let unreadable = try await LoadURLProcess.run(["-S", "-z", "no such date or file", url])
        #expect(unreadable.status == 0 && unreadable.stdout == "Hello from nginx\n" && unreadable.stderr.contains("-z"), "\(unreadable.stderr)")
    }

    @Test("-z checked against the response's Last-Modified when the server ignored the field (nginx answers 304 to an exact date alone), and for ftp: and file:, as curl: nothing written, a 304")
    func timeConditionOnOurSide() async throws {
        let servers = try TestServers.requireNginx()
        let folder = try scratchFolder("time-cond-ours")
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("kept.txt").path
        let local = folder.appendingPathComponent("local.txt")
        try Data("local file\n".utf8).write(to: local)
        let urls = ["http://127.0.0.1:\(servers.httpPort)/hello.txt", "ftp://127.0.0.1:\(try #require(TestServers.ftp).port)/hello.txt", local.absoluteString]
        for url in urls {
            try Data("kept copy\n".utf8).write(to: URL(fileURLWithPath: copy))
            // A date after the resource's: not new enough.
            let later = try await LoadURLProcess.run(["-sS", "-v", "-z", "1 Jan 2099", "-o", copy, "-w", "%{http_code}", url])
            #expect(later.status == 0 && later.stdout == "304", "\(url): \(later.stdout) \(later.stderr)")
            #expect(later.stderr.contains("* The requested document is not new enough"), "\(url): \(later.stderr)")
            #expect(text(copy) == "kept copy\n", "\(url): the kept copy was written over")
            // A date before it: the body comes.
            let earlier = try await LoadURLProcess.run(["-sS", "-z", "1 Jan 2000", "-o", copy, url])
            #expect(earlier.status == 0 && text(copy) != "kept copy\n", "\(url): \(earlier.stderr)")
        }
        // An error status is left to -f (and --retry), whatever its Last-Modified says.
        let error = try await LoadURLProcess.run(["-sf", "-z", "1 Jan 2099", "-w", "%{http_code}", "http://127.0.0.1:\(servers.httpPort)/old-404"])
        #expect(error.status == 22 && error.stdout == "404", "\(error.stdout) \(error.stderr)")
        // Unmodified since a date after it: met, the body comes (a server that ignored If-Unmodified-Since is checked too).
        let met = try await LoadURLProcess.run(["-sS", "-z", "-1 Jan 2099", local.absoluteString])
        #expect(met.stdout == "local file\n", "\(met.stderr)")
        let unmet = try await LoadURLProcess.run(["-sS", "-z", "-1 Jan 2000", "-w", "%{http_code}", local.absoluteString])
        #expect(unmet.stdout == "304", "\(unmet.stdout) \(unmet.stderr)")
    }

    @Test("--no-clobber leaves a file that is there: the body goes to NAME.1, then NAME.2 (%{filename_effective} says which); without it the file is written over")
    func noClobber() async throws {
        let url = "http://127.0.0.1:\(try TestServers.requireNginx().httpPort)/hello.txt"
        let folder = try scratchFolder("no-clobber")
        defer { try? FileManager.default.removeItem(at: folder) }
        let page = folder.appendingPathComponent("page").path
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: page))
        for number in 1...2 {
            let run = try await LoadURLProcess.run(["-sS", "--no-clobber", "-o", page, "-w", "%{filename_effective}", url])
            #expect(run.status == 0 && run.stdout == "\(page).\(number)", "\(run.stdout) \(run.stderr)")
            #expect(text("\(page).\(number)") == "Hello from nginx\n")
        }
        #expect(text(page) == "mine\n")
        let over = try await LoadURLProcess.run(["-sS", "-o", page, url])
        #expect(over.status == 0 && text(page) == "Hello from nginx\n")
    }

    @Test("--etag-save writes the ETag; --etag-compare sends it as If-None-Match, and the 304 leaves the copy as it was; a file to compare that is missing fails (26) unless --etag-save will write it")
    func etags() async throws {
        let port = try TestServers.requireNginx().httpPort
        let url = "http://127.0.0.1:\(port)/hello.txt"
        let folder = try scratchFolder("etags")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (etagFile, copy) = (folder.appendingPathComponent("etag").path, folder.appendingPathComponent("copy").path)
        let etag = try await headField("etag", of: url)
        // First run: no ETag file yet, so an empty one is asked for (If-None-Match: ""); the body comes, the ETag is kept.
        let first = try await LoadURLProcess.run(["-sS", "--etag-compare", etagFile, "--etag-save", etagFile, "-o", copy, url])
        #expect(first.status == 0 && text(copy) == "Hello from nginx\n", "\(first.stderr)")
        #expect(text(etagFile) == etag + "\n")
        // Next run: the same ETag, a 304, and the copy stays as it is (here written over, to see it is not touched).
        try Data("kept copy\n".utf8).write(to: URL(fileURLWithPath: copy))
        let again = try await LoadURLProcess.run(["-sS", "-v", "--etag-compare", etagFile, "--etag-save", etagFile, "-o", copy, "-w", "%{http_code}", url])
        #expect(again.status == 0 && again.stdout == "304", "\(again.stdout) \(again.stderr)")
        #expect(again.stderr.contains("> If-None-Match: \(etag)"), "\(again.stderr)")
        #expect(text(copy) == "kept copy\n", "the copy was written over")
        let missing = try await LoadURLProcess.run(["-sS", "--etag-compare", folder.appendingPathComponent("none").path, url])
        #expect(missing.status == 26 && missing.stdout.isEmpty && missing.stderr.contains("--etag-compare"), "\(missing.status) \(missing.stderr)")
    }

    @Test("-r gets the bytes asked for, from nginx and from a file: URL; from past a file's end it exits 36, from its end it gets nothing")
    func byteRange() async throws {
        let server = try TestServers.requireNginx()
        let http = try await LoadURLProcess.run(["-s", "-r", "0-4", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(http.status == 0 && http.stdout == "Hello", "\(http.stderr)")
        try await withTemporaryFolder("cli-range") { folder in
            let file = folder.appendingPathComponent("text.txt")
            try Data("0123456789".utf8).write(to: file)
            let local = try await LoadURLProcess.run(["-s", "-r", "-3", file.absoluteString])
            #expect(local.status == 0 && local.stdout == "789", "\(local.stderr)")
            // Past the end: curl's 36 (its offset is beyond the size), not 78 (no such file); from exactly the end,
            // nothing, and success, as curl.
            let past = try await LoadURLProcess.run(["-sS", "-r", "100-", file.absoluteString])
            #expect(past.status == 36 && past.stdout.isEmpty, "\(past.status) \(past.stderr)")
            let atEnd = try await LoadURLProcess.run(["-sS", "-r", "10-", file.absoluteString])
            #expect(atEnd.status == 0 && atEnd.stdout.isEmpty && atEnd.stderr.isEmpty, "\(atEnd.status) \(atEnd.stderr)")
        }
    }

    @Test("-R gives the output file the resource's time: a file: URL's, nginx's Last-Modified; without -R it is the time of writing")
    func remoteTime() async throws {
        let server = try TestServers.requireNginx()
        try await withTemporaryFolder("cli-remote-time") { folder in
            let source = folder.appendingPathComponent("source.txt")
            try Data("old\n".utf8).write(to: source)
            let then = Date(timeIntervalSince1970: 1_000_000_000)
            try FileManager.default.setAttributes([.modificationDate: then], ofItemAtPath: source.path)
            func modified(_ name: String) throws -> Date? {
                try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.modificationDate] as? Date
            }
            let copied = try await LoadURLProcess.run(["-s", "-R", "-o", folder.appendingPathComponent("copy.txt").path, source.absoluteString])
            #expect(copied.status == 0, "\(copied.stderr)")
            #expect(try modified("copy.txt") == then)

            let heads = folder.appendingPathComponent("heads.txt").path
            let url = "http://127.0.0.1:\(server.httpPort)/hello.txt"
            let fetched = try await LoadURLProcess.run(["-s", "-R", "-D", heads, "-o", folder.appendingPathComponent("hello.txt").path, url])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            let line = try String(contentsOfFile: heads, encoding: .utf8).components(separatedBy: "\r\n").first { $0.hasPrefix("Last-Modified: ") }
            let stamp = try #require(line.flatMap { HTTPDate.parse(String($0.dropFirst("Last-Modified: ".count))) }, "\(String(describing: line))")
            #expect(try modified("hello.txt") == stamp)
            let plain = try await LoadURLProcess.run(["-s", "-o", folder.appendingPathComponent("plain.txt").path, source.absoluteString])
            let written = try modified("plain.txt")
            #expect(plain.status == 0 && written.map { $0 > then } == true)
        }
    }

    @Test("--max-filesize: an announced size over it fails (63) before a byte is written; a body that grows past it fails as it does")
    func maxFileSize() async throws {
        let server = try TestServers.requireNginx()
        try await withTemporaryFolder("cli-max-filesize") { folder in
            let output = folder.appendingPathComponent("out.bin").path
            let announced = try await LoadURLProcess.run(["-sS", "--max-filesize", "1000", "-o", output, "http://127.0.0.1:\(server.httpPort)/1m.bin"])
            #expect(announced.status == 63, "\(announced.stderr)")
            #expect(announced.stderr.contains("--max-filesize") && announced.stderr.contains("1m.bin"), "\(announced.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output))
            // gzip from nginx, chunked: no size is announced.
            let grown = try await LoadURLProcess.run(["-sS", "--max-filesize", "1000", "-H", "Accept-Encoding: gzip", "-o", output,
                                                     "http://127.0.0.1:\(server.httpPort)/gz/lines.txt"])
            #expect(grown.status == 63 && grown.stderr.contains("grew past the limit"), "\(grown.stderr)")
            let written = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
            #expect(written <= 1000, "\(written) bytes written past the limit")
            let fits = try await LoadURLProcess.run(["-s", "--max-filesize", "17", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
            #expect(fits.status == 0 && fits.stdout == "Hello from nginx\n")
            // A head announces a size it does not send; 0 is no limit.
            let head = try await LoadURLProcess.run(["-s", "-I", "--max-filesize", "10", "http://127.0.0.1:\(server.httpPort)/1m.bin"])
            #expect(head.status == 0 && head.stdout.contains("Content-Length: 1048576"), "\(head.stderr)")
            let unlimited = try await LoadURLProcess.run(["-s", "--max-filesize", "0", "-o", output, "http://127.0.0.1:\(server.httpPort)/1m.bin"])
            let size = try FileManager.default.attributesOfItem(atPath: output)[.size] as? Int
            #expect(unlimited.status == 0 && size == 1 << 20, "\(unlimited.stderr)")
        }
    }
}
