import Foundation
import TestSupport
import Testing

/// `loadurl`'s `-x`, `-U`, `--noproxy` and the proxy variables, through tinyproxy and dante to nginx.
@Suite("loadurl: proxies (-x, -U, --noproxy, http_proxy …) through tinyproxy and dante")
struct CLIProxyTests {
    private func servers() throws -> (nginx: TestServers.Nginx, proxies: TestServers.Proxies) {
        (try TestServers.requireNginx(),
         try #require(TestServers.proxies, "tinyproxy could not be started by scripts/test-servers"))
    }

    /// Whether a printed head (`-i`) came through tinyproxy: it adds `Via: 1.1 … (tinyproxy/…)`.
    private func viaProxy(_ output: String) -> Bool {
        output.split(separator: "\r\n").contains { $0.lowercased().hasPrefix("via:") && $0.contains("tinyproxy") }
    }

    @Test("An HTTPS proxy (-x https://, or in a proxy variable) carries http and https, its certificate checked with --proxy-cacert's CA (not --cacert's), -U logging in")
    func httpsProxy() async throws {
        let (nginx, proxies) = try servers()
        let http = "http://127.0.0.1:\(nginx.httpPort)/hello.txt"
        let https = "https://localhost:\(nginx.httpsPort)/hello.txt"
        let both = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "--proxy-cacert", nginx.caFile,
                                                 "-x", "https://localhost:\(proxies.tlsAuthPort)", "-U", "user:secret", http, https])
        #expect(both.status == 0 && both.stdout == "Hello from nginx\nHello from nginx\n", "\(both.status) \(both.stderr)")
        // In a proxy variable: it was refused as one this tool could not use (exit 7).
        let variable = try await LoadURLProcess.run(["-sS", "-i", "--proxy-cacert", nginx.caFile, http],
                                                    environment: ["http_proxy": "https://localhost:\(proxies.tlsPort)"])
        #expect(variable.status == 0 && viaProxy(variable.stdout), "\(variable.status) \(variable.stderr)")
        // --cacert is for servers, as curl keeps it: the proxy is not trusted with it alone (curl's 60, naming the proxy),
        // and --proxy-insecure lets it through.
        let untrusted = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "-x", "https://localhost:\(proxies.tlsPort)", http])
        #expect(untrusted.status == 60 && untrusted.stdout.isEmpty, "\(untrusted.status)")
        #expect(untrusted.stderr.contains("the proxy localhost:\(proxies.tlsPort) (TLS)"), "\(untrusted.stderr)")
        let unchecked = try await LoadURLProcess.run(["-sS", "--proxy-insecure", "-x", "https://localhost:\(proxies.tlsPort)", http])
        #expect(unchecked.status == 0 && unchecked.stdout == "Hello from nginx\n", "\(unchecked.status) \(unchecked.stderr)")
    }

    @Test("-x sends http and https through the proxy; -U logs in to it; without -U the tunnel is refused, naming the proxy")
    func explicitProxy() async throws {
        let (nginx, proxies) = try servers()
        let http = "http://127.0.0.1:\(nginx.httpPort)/hello.txt"
        let https = "https://localhost:\(nginx.httpsPort)/hello.txt"
        let plain = try await LoadURLProcess.run(["-sS", "-i", "-x", "127.0.0.1:\(proxies.port)", http])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(viaProxy(plain.stdout) && plain.stdout.hasSuffix("Hello from nginx\n"), "\(plain.stdout)")
        let tunnelled = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "-x", "http://127.0.0.1:\(proxies.authPort)",
                                                      "-U", "user:secret", https, http])
        #expect(tunnelled.status == 0, "\(tunnelled.stderr)")
        #expect(tunnelled.stdout == "Hello from nginx\nHello from nginx\n")
        // A login in the proxy's URL wins over -U's, as curl 7.88 keeps it.
        let written = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "-x", "http://user:secret@127.0.0.1:\(proxies.authPort)",
                                                    "-U", "user:wrong", https])
        #expect(written.status == 0 && written.stdout == "Hello from nginx\n", "\(written.stderr)")
        let refused = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "-x", "127.0.0.1:\(proxies.authPort)", https])
        // curl's status for a refused CONNECT, a 407 as any other.
        #expect(refused.status == 56 && refused.stdout.isEmpty, "\(refused.status)")
        #expect(refused.stderr.contains("the proxy 127.0.0.1:\(proxies.authPort) refused the tunnel"), "\(refused.stderr)")
        // A target the proxy cannot reach (tinyproxy: 500): 56 as well, not the 7 of a connection of our own refused.
        let unreachable = try await LoadURLProcess.run(["-v", "-sS", "-p", "-x", "127.0.0.1:\(proxies.port)", "http://127.0.0.1:1/"])
        #expect(unreachable.status == 56, "\(unreachable.status): \(unreachable.stderr)")
        // -v tells the CONNECT and the proxy's answer before the failure, as for a tunnel that opened.
        let lines = unreachable.stderr.split(separator: "\n").map(String.init)
        let connect = lines.firstIndex(of: "> CONNECT 127.0.0.1:1 HTTP/1.1")
        let answer = lines.firstIndex { $0.hasPrefix("< HTTP/1.") && $0.contains(" 500 ") }
        let failure = lines.firstIndex { $0.hasPrefix("* ") && $0.contains("refused the tunnel") }
        #expect(connect != nil && answer != nil && failure != nil, "\(unreachable.stderr)")
        if let connect, let answer, let failure { #expect(connect < answer && answer < failure, "\(unreachable.stderr)") }
        #expect(unreachable.stderr.contains("the proxy 127.0.0.1:\(proxies.port) refused the tunnel to 127.0.0.1:1: 500"), "\(unreachable.stderr)")
    }

    @Test("-p sends http through the proxy's tunnel too: a CONNECT, no Via from the proxy")
    func proxyTunnel() async throws {
        let (nginx, proxies) = try servers()
        let http = "http://127.0.0.1:\(nginx.httpPort)/hello.txt"
        let run = try await LoadURLProcess.run(["-v", "-sS", "-i", "-p", "-x", "127.0.0.1:\(proxies.port)", http])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!viaProxy(run.stdout) && run.stdout.hasSuffix("Hello from nginx\n"), "\(run.stdout)")
        #expect(run.stderr.contains("> CONNECT 127.0.0.1:\(nginx.httpPort) HTTP/1.1"), "\(run.stderr)")
    }

    @Test("-v through a proxy's tunnel tells the CONNECT and the proxy's answer before the request, once per connection (HTTP/1.1 and HTTP/2)")
    func verboseTunnel() async throws {
        let (nginx, proxies) = try servers()
        for port in [nginx.httpsPort, nginx.h2Port] {
            let url = "https://localhost:\(port)/hello.txt"
            let run = try await LoadURLProcess.run(["-v", "-s", "--cacert", nginx.caFile, "-x", "http://127.0.0.1:\(proxies.authPort)",
                                                   "-U", "user:secret", url, url])
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stderr.split(separator: "\n").map(String.init)
            let connect = lines.firstIndex(of: "> CONNECT localhost:\(port) HTTP/1.1")
            let answer = lines.firstIndex { $0.hasPrefix("< HTTP/1.") && $0.hasSuffix(" 200 Connection established") }
            let request = lines.firstIndex { $0.hasPrefix("> GET /hello.txt HTTP/") }
            #expect(connect != nil && answer != nil && request != nil, "\(run.stderr)")
            if let connect, let answer, let request { #expect(connect < answer && answer < request, "\(run.stderr)") }
            #expect(lines.contains("> Proxy-Authorization: Basic dXNlcjpzZWNyZXQ="), "\(run.stderr)")
            // The second URL goes on the same tunnel: no second CONNECT.
            #expect(lines.filter { $0.hasPrefix("> CONNECT ") }.count == 1, "\(run.stderr)")
            #expect(lines.contains { $0.hasPrefix("* Re-using existing connection with host 127.0.0.1") }, "\(run.stderr)")
            #expect(lines.filter { $0.hasPrefix("> GET /hello.txt") }.count == 2, "\(run.stderr)")
        }
    }

    @Test("Without -x, http_proxy, https_proxy and no_proxy are read as curl reads them; HTTP_PROXY is not; -x '' and --noproxy win")
    func environment() async throws {
        let (nginx, proxies) = try servers()
        let http = "http://127.0.0.1:\(nginx.httpPort)/hello.txt"
        let proxy = "http://127.0.0.1:\(proxies.port)"
        let fromEnvironment = try await LoadURLProcess.run(["-sS", "-i", http], environment: ["http_proxy": proxy])
        #expect(viaProxy(fromEnvironment.stdout), "\(fromEnvironment.stdout) \(fromEnvironment.stderr)")
        let upper = try await LoadURLProcess.run(["-sS", "-i", http], environment: ["HTTP_PROXY": proxy])
        #expect(upper.status == 0 && !viaProxy(upper.stdout), "\(upper.stdout)")
        let excepted = try await LoadURLProcess.run(["-sS", "-i", http], environment: ["http_proxy": proxy, "no_proxy": "localhost,127.0.0.1"])
        #expect(excepted.status == 0 && !viaProxy(excepted.stdout), "\(excepted.stdout)")
        let none = try await LoadURLProcess.run(["-sS", "-i", "-x", "", http], environment: ["http_proxy": proxy])
        #expect(none.status == 0 && !viaProxy(none.stdout), "\(none.stdout)")
        let direct = try await LoadURLProcess.run(["-sS", "-i", "--noproxy", "*", http], environment: ["all_proxy": proxy])
        #expect(direct.status == 0 && !viaProxy(direct.stdout), "\(direct.stdout)")
        // https_proxy alone leaves http direct.
        let secureOnly = try await LoadURLProcess.run(["-sS", "-i", http], environment: ["https_proxy": proxy])
        #expect(secureOnly.status == 0 && !viaProxy(secureOnly.stdout), "\(secureOnly.stdout)")
        // A proxy this tool cannot use fails the loads it names (7, saying which), never sends them direct; no_proxy's
        // hosts, and other schemes' loads, go on.
        let https = "https://localhost:\(nginx.httpsPort)/hello.txt"
        let unusable = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, https, http], environment: ["https_proxy": "ftp://127.0.0.1:9"])
        #expect(unusable.status == 7 && unusable.stdout == "Hello from nginx\n", "\(unusable.status) \(unusable.stdout)")
        #expect(unusable.stderr.contains("https_proxy ('ftp://127.0.0.1:9') is not one this tool can use"), "\(unusable.stderr)")
        let exempt = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, https],
                                                  environment: ["all_proxy": "https://127.0.0.1:9", "no_proxy": "localhost"])
        #expect(exempt.status == 0 && exempt.stdout == "Hello from nginx\n", "\(exempt.stderr)")
        // Nor through a redirect: 127.0.0.1 is exempt, the localhost it sends to is not.
        let redirected = try await LoadURLProcess.run(["-sS", "-L", "http://127.0.0.1:\(nginx.httpPort)/to-localhost"],
                                                      environment: ["http_proxy": "ftp://127.0.0.1:9", "no_proxy": "127.0.0.1"])
        #expect(redirected.status == 7 && redirected.stdout.isEmpty, "\(redirected.status) \(redirected.stdout)")
        #expect(redirected.stderr.contains("http_proxy ('ftp://127.0.0.1:9')"), "\(redirected.stderr)")
        // --unix-socket uses no proxy at all: nothing to refuse.
        let socket = try await LoadURLProcess.run(["-sS", "--unix-socket", nginx.unixSocket, "http://site.invalid/hello.txt"],
                                                  environment: ["http_proxy": "ftp://127.0.0.1:9"])
        #expect(socket.status == 0 && socket.stdout == "Hello from nginx\n", "\(socket.stderr)")
    }

    @Test("-x socks5h:// and socks4:// (and curl's --socks5, --socks5-hostname, --socks4) go through the SOCKS proxy; a proxy of another kind is a usage error (2), said before any transfer, and in a variable fails its loads (7); a SOCKS refusal is 97")
    func socksAndUnsupported() async throws {
        let (nginx, proxies) = try servers()
        let socks = try await LoadURLProcess.run(["-sS", "-x", "socks5h://127.0.0.1:\(proxies.socksPort)", "--cacert", nginx.caFile,
                                                  "http://localhost:\(nginx.httpPort)/hello.txt", "https://localhost:\(nginx.httpsPort)/hello.txt"])
        #expect(socks.status == 0, "\(socks.stderr)")
        #expect(socks.stdout == "Hello from nginx\nHello from nginx\n")
        // A SOCKS5 proxy asking for a user name and password: given with -U or in the proxy's URL, or not at all.
        let hello = "http://localhost:\(nginx.httpPort)/hello.txt"
        let socksLogin = try #require(proxies.socksLogin, "dante asking for a login could not be started (it needs root)")
        let login = try await LoadURLProcess.run(["-sS", "-x", "socks5h://127.0.0.1:\(socksLogin.port)", "-U", "\(socksLogin.user):\(socksLogin.password)", hello])
        #expect(login.status == 0 && login.stdout == "Hello from nginx\n", "\(login.stderr)")
        let inURL = try await LoadURLProcess.run(["-sS", "-x", "socks5h://\(socksLogin.user):\(socksLogin.password)@127.0.0.1:\(socksLogin.port)", hello])
        #expect(inURL.status == 0 && inURL.stdout == "Hello from nginx\n", "\(inURL.stderr)")
        let refused = try await LoadURLProcess.run(["-sS", "-x", "socks5h://127.0.0.1:\(socksLogin.port)", "-U", "\(socksLogin.user):wrong", hello])
        // A SOCKS handshake that fails is curl's 97 (a proxy handshake error), the login's refusal too.
        #expect(refused.status == 97 && refused.stdout.isEmpty, "login denied: \(refused.status) \(refused.stdout)")
        #expect(refused.stderr.contains("refused the user name and password"), "\(refused.stderr)")
        let unusable = try await LoadURLProcess.run(["-sS", "http://127.0.0.1:\(nginx.httpPort)/hello.txt"], environment: ["http_proxy": "ftp://127.0.0.1:1"])
        // Never direct: the load fails, naming the variable (see `environment` for https_proxy and no_proxy).
        #expect(unusable.status == 7 && unusable.stdout.isEmpty && unusable.stderr.contains("http_proxy ('ftp://127.0.0.1:1')"), "\(unusable.stderr)")
        let run = try await LoadURLProcess.run(["-sS", "-x", "ftp://127.0.0.1:1080", "data:,x"])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("-x wants an HTTP, HTTPS, SOCKS5 or SOCKS4 proxy"), "\(run.stderr)")
        // SOCKS4, the name resolved here; SOCKS4a, which dante refuses (91): exit 97, as curl's.
        let socks4 = try await LoadURLProcess.run(["-sS", "-x", "socks4://127.0.0.1:\(proxies.socksPort)", "--cacert", nginx.caFile,
                                                   hello, "https://localhost:\(nginx.httpsPort)/hello.txt"])
        #expect(socks4.status == 0 && socks4.stdout == "Hello from nginx\nHello from nginx\n", "\(socks4.stderr)")
        // curl's --socks options: -x with that scheme; beside -x, or two of them (curl takes the last), a usage error.
        for option in ["--socks5", "--socks5-hostname", "--socks4"] {
            let run = try await LoadURLProcess.run(["-sS", option, "127.0.0.1:\(proxies.socksPort)", hello], environment: ["http_proxy": "ftp://127.0.0.1:9"])
            #expect(run.status == 0 && run.stdout == "Hello from nginx\n", "\(option): \(run.status) \(run.stderr)")
        }
        let viaSocks4a = try await LoadURLProcess.run(["-sS", "--socks4a", "127.0.0.1:\(proxies.socksPort)", hello])
        #expect(viaSocks4a.status == 97 && viaSocks4a.stderr.contains("SOCKS4 reply 91"), "dante refuses SOCKS4a: \(viaSocks4a.stderr)")
        let chained = try await LoadURLProcess.run(["-sS", "--socks5", "127.0.0.1:1", "-x", "http://127.0.0.1:2", hello])
        #expect(chained.status == 2 && chained.stderr.contains("give -x or --socks5, not both"), "\(chained.stderr)")
        let twice = try await LoadURLProcess.run(["-sS", "--socks5", "127.0.0.1:1", "--socks4", "127.0.0.1:2", hello])
        #expect(twice.status == 2 && twice.stderr.contains("--socks5 and --socks4"), "\(twice.stderr)")
        let socks4a = try await LoadURLProcess.run(["-sS", "-x", "socks4a://127.0.0.1:\(proxies.socksPort)", hello])
        #expect(socks4a.status == 97 && socks4a.stdout.isEmpty, "\(socks4a.status) \(socks4a.stdout)")
        #expect(socks4a.stderr.contains("the SOCKS4 proxy 127.0.0.1:\(proxies.socksPort) refused the request or could not connect to localhost:\(nginx.httpPort) (SOCKS4 reply 91)"),
                "\(socks4a.stderr)")
    }

    @Test("--proxy-header goes to the proxy alone: with a request it forwards, with the CONNECT of -p (shown by -v), never to the server through a tunnel; a malformed one is a usage error")
    func proxyHeader() async throws {
        let nginx = try TestServers.requireNginx()
        let proxies = try #require(TestServers.proxies, "the proxies could not be started by scripts/test-servers")
        let url = "http://127.0.0.1:\(nginx.httpPort)/proxy-note"
        let proxy = "http://127.0.0.1:\(proxies.port)"
        let forwarded = try await LoadURLProcess.run(["-sS", "-x", proxy, "--proxy-header", "X-Proxy-Note: hi", url])
        #expect(forwarded.status == 0 && forwarded.stdout == "x-proxy-note=hi\n", "\(forwarded.status) \(forwarded.stderr)")
        let tunnelled = try await LoadURLProcess.run(["-sSv", "-p", "-x", proxy, "--proxy-header", "X-Proxy-Note: hi", url])
        #expect(tunnelled.status == 0 && tunnelled.stdout == "x-proxy-note=\n", "\(tunnelled.status) \(tunnelled.stderr)")
        #expect(tunnelled.stderr.contains("> X-Proxy-Note: hi\n"), "\(tunnelled.stderr)")
        // Read as -H's are: from a file too, one field a line.
        let folder = try scratchFolder("loadurl-proxy-header")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("fields")
        try Data("X-Proxy-Note: from a file\n".utf8).write(to: file)
        let fromFile = try await LoadURLProcess.run(["-sS", "-x", proxy, "--proxy-header", "@" + file.path, url])
        #expect(fromFile.status == 0 && fromFile.stdout == "x-proxy-note=from a file\n", "\(fromFile.status) \(fromFile.stderr)")
        for bad in ["no colon", "Transfer-Encoding: chunked"] {
            let malformed = try await LoadURLProcess.run(["-sS", "-x", proxy, "--proxy-header", bad, url])
            #expect(malformed.status == 2 && malformed.stderr.contains("--proxy-header"), "\(bad): \(malformed.status) \(malformed.stderr)")
        }
    }

    @Test("A proxy whose name is not found exits 5 (an HTTP or a SOCKS proxy), not the server's 6, as curl's; one that refuses the connection, 7")
    func unreachableProxies() async throws {
        let nginx = try TestServers.requireNginx()
        let hello = "http://localhost:\(nginx.httpPort)/hello.txt"
        for proxy in ["http://no-such-proxy.invalid:3128", "socks5h://no-such-proxy.invalid:1080"] {
            let run = try await LoadURLProcess.run(["-sS", "-x", proxy, hello])
            #expect(run.status == 5 && run.stdout.isEmpty && run.stderr.contains("no-such-proxy.invalid"), "\(proxy): \(run.status) \(run.stderr)")
        }
        let refused = try await LoadURLProcess.run(["-sS", "-x", "http://127.0.0.1:\(LoopbackPorts.closed())", hello])
        #expect(refused.status == 7, "\(refused.status) \(refused.stderr)")
    }
}
