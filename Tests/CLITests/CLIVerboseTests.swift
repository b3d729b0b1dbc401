import Foundation
import TestSupport
import Testing

/// `loadurl -v` against the real nginx: each exchange told on standard error as curl tells it.
@Suite("loadurl: -v tells each exchange with the server")
struct CLIVerboseTests {
    /// Expects each of `expected` among `lines` (of `output`), in order, one after another.
    private static func expectInOrder(_ expected: [String], in lines: [String], of output: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) {
        var from = 0
        for line in expected {
            let found = lines[from...].firstIndex(of: line)
            #expect(found != nil, "\(line) after line \(from) of:\n\(output)", sourceLocation: sourceLocation)
            from = (found ?? from) + 1
        }
    }

    @Test("-v -L: the connection, each request as sent (> lines, the session's cookie too) and each response head (< lines), in order; the body alone on stdout")
    func verboseRedirect() async throws {
        let port = try TestServers.requireNginx().httpPort
        let run = try await LoadURLProcess.run(["-v", "-s", "-L", "-b", "flavour=oat", "-H", "X-Test: 1",
                                               "http://127.0.0.1:\(port)/redirect"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "Hello from nginx\n")
        let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let expected = [
            "* Connected to 127.0.0.1 (127.0.0.1) port \(port)",
            "> GET /redirect HTTP/1.1",
            "< HTTP/1.1 301 Moved Permanently",
            "* Re-using existing connection with host 127.0.0.1 (127.0.0.1) port \(port)",
            "> GET /hello.txt HTTP/1.1",
            "< HTTP/1.1 200 OK",
            "< Content-Length: 17",
        ]
        Self.expectInOrder(expected, in: lines, of: run.stderr)
        // Host first after the request line, in its usual case, as curl sends it (RFC 9112 §3.2).
        if let requestLine = lines.firstIndex(of: "> GET /hello.txt HTTP/1.1"), requestLine + 1 < lines.count {
            #expect(lines[requestLine + 1] == "> Host: 127.0.0.1:\(port)", "\(lines)")
        } else {
            Issue.record("no request line for /hello.txt: \(lines)")
        }
        let sent = lines.filter { $0.hasPrefix("> ") }.map { $0.lowercased() }
        #expect(sent.filter { $0 == "> host: 127.0.0.1:\(port)" }.count == 2, "\(sent)")
        #expect(sent.filter { $0 == "> x-test: 1" }.count == 2, "\(sent)")
        #expect(sent.filter { $0 == "> cookie: flavour=oat" }.count == 2, "\(sent)")
        #expect(lines.filter { $0 == ">" }.count == 2 && lines.filter { $0 == "<" }.count == 2, "\(run.stderr)")
    }

    @Test("-v on ftp: the dialogue, each command (> lines) and reply (< lines) in order; the second URL re-uses the connection and shows its 550; -w has the address")
    func verboseFTP() async throws {
        let server = try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers")
        let base = "ftp://127.0.0.1:\(server.port)"
        let run = try await LoadURLProcess.run(["-v", "-s", "-w", "%{remote_ip}:%{remote_port}\n", base + "/hello.txt", base + "/missing.txt"])
        #expect(run.status == 78, "\(run.stderr)")
        #expect(run.stdout == "Hello from FTP\n127.0.0.1:\(server.port)\n127.0.0.1:\(server.port)\n")
        let lines = run.stderr.split(separator: "\n").map(String.init)
        let expected = [
            "* Connected to 127.0.0.1 (127.0.0.1) port \(server.port)",
            "> USER anonymous",
            "< 230 Login successful.",
            "> RETR hello.txt",
            "* Re-using existing connection with host 127.0.0.1 (127.0.0.1) port \(server.port)",
            "> SIZE missing.txt",
            "< 550 /missing.txt is not retrievable.",
        ]
        Self.expectInOrder(expected, in: lines, of: run.stderr)
        // Without -v, none of it.
        let quiet = try await LoadURLProcess.run(["-s", base + "/hello.txt"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test("-e 'URL;auto' sends URL first, then on each redirect the URL it comes from (no user, password or fragment); without ;auto the redirect sends the first")
    func autoReferer() async throws {
        let port = try TestServers.requireNginx().httpPort
        func referers(_ arguments: [String]) async throws -> [String] {
            let run = try await LoadURLProcess.run(["-v", "-s", "-L", "-o", "/dev/null"] + arguments)
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stderr.split(separator: "\n").map(String.init)
            // Each request's Referer, or "-" for none: the lines of one request run from its "> GET" to its blank ">".
            var found: [String] = []
            for line in lines {
                if line.hasPrefix("> GET ") { found.append("-") }
                if line.lowercased().hasPrefix("> referer: ") { found[found.count - 1] = String(line.dropFirst("> referer: ".count)) }
            }
            return found
        }
        let redirect = "http://127.0.0.1:\(port)/redirect"
        #expect(try await referers(["-e", "http://first.example/;auto", "http://u:p@127.0.0.1:\(port)/redirect#part"])
                == ["http://first.example/", redirect])
        #expect(try await referers(["-e", ";auto", redirect]) == ["-", redirect])
        #expect(try await referers(["-e", "http://first.example/", redirect]) == ["http://first.example/", "http://first.example/"])
        // A -H Referer, or -H 'Referer:' (none), wins on every request.
        #expect(try await referers(["-e", ";auto", "-H", "Referer: mine", redirect]) == ["mine", "mine"])
        #expect(try await referers(["-e", "http://first.example/;auto", "-H", "Referer:", redirect]) == ["-", "-"])
    }

    @Test("Without -v nothing of the exchange goes to standard error; -v over HTTP/2 says so")
    func quietAndHTTP2() async throws {
        let server = try TestServers.requireNginx()
        let quiet = try await LoadURLProcess.run(["-s", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        let h2 = try await LoadURLProcess.run(["-v", "-s", "--cacert", server.caFile, "https://localhost:\(server.h2Port)/hello.txt"])
        #expect(h2.status == 0 && h2.stdout == "Hello from nginx\n", "\(h2.stderr)")
        #expect(h2.stderr.contains("* Using HTTP/2\n> GET /hello.txt HTTP/2\n"), "\(h2.stderr)")
        #expect(h2.stderr.contains("< HTTP/2 200 \n"), "\(h2.stderr)")
    }

    @Test("-w's connection variables: the last exchange's addresses, one connection for two URLs and a redirect, the redirect counted, the times")
    func connectionVariables() async throws {
        let port = try TestServers.requireNginx().httpPort
        let format = "%{remote_ip} %{remote_port} %{local_ip} %{local_port} %{num_connects} %{num_redirects} %{time_connect} %{time_starttransfer}\\n"
        let run = try await LoadURLProcess.run(["-s", "-L", "-o", "/dev/null", "-o", "/dev/null", "-w", format,
                                               "http://127.0.0.1:\(port)/redirect", "http://127.0.0.1:\(port)/hello.txt"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        try #require(lines.count == 2 && lines.allSatisfy { $0.count == 8 }, "\(run.stdout)")
        for fields in lines {
            #expect(fields[0] == "127.0.0.1" && fields[1] == "\(port)" && fields[2] == "127.0.0.1", "\(fields)")
            #expect((Int(fields[3]) ?? 0) > 0 && fields[3] == lines[0][3], "one connection for all: \(lines)")
            #expect(Double(fields[7]).map { $0 > 0 } == true, "\(fields)")
        }
        // The first transfer opened the connection and followed one redirect; the second reused it.
        #expect(lines[0][4] == "1" && lines[0][5] == "1" && Double(lines[0][6]).map { $0 > 0 } == true, "\(lines[0])")
        #expect(lines[1][4] == "0" && lines[1][5] == "0" && lines[1][6] == "0.000000", "\(lines[1])")
    }

    @Test("-w's times over HTTPS: the connect, the TLS handshake's end, the request going out and the response's head, in that order; no TLS time over http")
    func connectionTimes() async throws {
        let nginx = try TestServers.requireNginx()
        let format = "%{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer}\n"
        let run = try await LoadURLProcess.run(["-s", "--cacert", nginx.caFile, "-o", "/dev/null", "-o", "/dev/null", "-w", format,
                                               "https://localhost:\(nginx.httpsPort)/hello.txt", "http://127.0.0.1:\(nginx.httpPort)/hello.txt"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map { $0.split(separator: " ").compactMap { Double($0) } }
        try #require(lines.count == 2 && lines.allSatisfy { $0.count == 4 }, "\(run.stdout)")
        let secure = lines[0]
        #expect(secure[0] > 0 && secure[0] < secure[1] && secure[1] <= secure[2] && secure[2] <= secure[3], "\(secure)")
        let plain = lines[1]
        #expect(plain[0] > 0 && plain[1] == 0 && plain[0] <= plain[2] && plain[2] <= plain[3], "\(plain)")
    }

    @Test("-v through an HTTP proxy: connected to the proxy, the request line with the whole URL as it went to the proxy")
    func verboseThroughProxy() async throws {
        let server = try TestServers.requireNginx()
        let proxy = try #require(TestServers.proxies, "the proxies could not be started by scripts/test-servers")
        let run = try await LoadURLProcess.run(["-v", "-s", "-x", "http://127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(server.httpPort)/hello.txt"])
        #expect(run.status == 0 && run.stdout == "Hello from nginx\n", "\(run.stderr)")
        #expect(run.stderr.contains("* Connected to 127.0.0.1 (127.0.0.1) port \(proxy.port)\n"), "\(run.stderr)")
        #expect(run.stderr.contains("> GET http://127.0.0.1:\(server.httpPort)/hello.txt HTTP/1.1\n"), "\(run.stderr)")
    }

    @Test("-v tells of a failure even with -s: a refused connection")
    func verboseFailure() async throws {
        let port = LoopbackPorts.closed()
        let run = try await LoadURLProcess.run(["-v", "-s", "http://127.0.0.1:\(port)/"])
        #expect(run.status == 7)
        #expect(run.stderr.hasPrefix("* ") && run.stderr.contains("127.0.0.1:\(port)") && run.stderr.contains("Connection refused"), "\(run.stderr)")
        let quiet = try await LoadURLProcess.run(["-s", "http://127.0.0.1:\(port)/"])
        #expect(quiet.status == 7 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test("-w's connection variables after a failed transfer (-f and a 404) still tell of its connection")
    func variablesAfterFailure() async throws {
        let port = try TestServers.requireNginx().httpPort
        let run = try await LoadURLProcess.run(["-s", "-f", "-w", "%{num_connects} %{remote_ip} %{remote_port} %{http_code}",
                                               "http://127.0.0.1:\(port)/status/404"])
        #expect(run.status == 22)
        #expect(run.stdout == "1 127.0.0.1 \(port) 404", "\(run.stdout)")
    }
}
