import Foundation
import HTTPTypes
import Loader
import NIOCore
import TestSupport
import Testing
@testable import HTTPScheme

/// Requests through real proxies (tinyproxy and dante, started by scripts/test-servers) to the real nginx.
@Suite("http(s): through HTTP proxies (tinyproxy) and SOCKS5 proxies (dante)")
struct HTTPProxyTests {
    private func proxies() throws -> TestServers.Proxies {
        try #require(TestServers.proxies, "tinyproxy could not be started by scripts/test-servers")
    }

    private func session(_ proxy: HTTPClientOptions.Proxy?, noProxy: [String] = []) throws -> LoaderSession {
        try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
            $0.handlerOptions[HTTPClientOptions.self].httpsProxy = proxy
            $0.handlerOptions[HTTPClientOptions.self].noProxy = noProxy
        }
    }

    @Test("An http request goes to the proxy whole (the proxy adds its Via field), and keeps its body and status")
    func forwardsHTTP() async throws {
        let session = try session(HTTPClientOptions.Proxy(host: "127.0.0.1", port: try proxies().port))
        let (data, response) = try await session.data(from: Nginx.http("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.status == .ok)
        #expect(response.headerFields[HTTPField.Name("Via")!]?.contains("tinyproxy") == true, "\(response.headerFields)")
        let (missing, notFound) = try await session.data(from: Nginx.http("/status/404"))
        #expect(notFound.status == .notFound && String(decoding: missing, as: UTF8.self) == "not here\n")
    }

    @Test("The proxy's own fields (curl's --proxy-header) go with a request it forwards and with each CONNECT, never to a server through the tunnel")
    func proxyHeaderFields() async throws {
        var proxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: try proxies().port)
        proxy.headerFields[HTTPField.Name("X-Proxy-Note")!] = "for the proxy"
        let forwarded = try session(proxy)
        let (data, _) = try await forwarded.data(from: Nginx.http("/proxy-note"))
        #expect(String(decoding: data, as: UTF8.self) == "x-proxy-note=for the proxy\n", "forwarded, the proxy passes the request on whole")
        let tunnelled = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
            $0.handlerOptions[HTTPClientOptions.self].tunnelsThroughProxy = true
        }
        let recorder = HTTPMetricsTests.Recorder()
        let (inside, _) = try await tunnelled.data(for: LoadRequest(url: Nginx.http("/proxy-note")), delegate: recorder)
        #expect(String(decoding: inside, as: UTF8.self) == "x-proxy-note=\n", "through the tunnel the server never sees it")
        let dialogue = recorder.finished.withLock { $0.first?.transactions.first?.dialogue } ?? []
        #expect(dialogue.contains("> X-Proxy-Note: for the proxy"), "the CONNECT carries it: \(dialogue)")
        // Without a proxy, nobody gets it.
        let direct = try session(nil)
        #expect(try await direct.data(from: Nginx.http("/proxy-note")).0 == Data("x-proxy-note=\n".utf8))
        // A Proxy-Authorization among them logs in to a proxy that asks, forwarding and tunnelling alike.
        var login = HTTPClientOptions.Proxy(host: "127.0.0.1", port: try proxies().authPort)
        login.headerFields[.proxyAuthorization] = "Basic " + Data("user:secret".utf8).base64EncodedString()
        for tunnels in [false, true] {
            let session = try Nginx.session {
                $0.handlerOptions[HTTPClientOptions.self].httpProxy = login
                $0.handlerOptions[HTTPClientOptions.self].tunnelsThroughProxy = tunnels
            }
            let (_, response) = try await session.data(from: Nginx.http("/hello.txt"))
            #expect(response.status == .ok, "tunnels: \(tunnels)")
        }
        // Fields that frame the message are not the proxy's to set.
        var framing = proxy
        framing.headerFields[.contentLength] = "0"
        let refused = await loadError { _ = try await session(framing).data(from: Nginx.http("/hello.txt")) }
        #expect(refused?.code == .unsupportedURL && refused?.reason?.contains("Content-Length") == true, "\(String(describing: refused))")
    }

    @Test("tunnelsThroughProxy (curl's -p): an http request goes through a CONNECT tunnel too, the proxy's credentials to the proxy alone")
    func tunnelsHTTPWhenAsked() async throws {
        let proxies = try proxies()
        var proxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.authPort)
        proxy.user = "user"
        proxy.password = "secret"
        let session = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
            $0.handlerOptions[HTTPClientOptions.self].tunnelsThroughProxy = true
        }
        let (data, response) = try await session.data(from: Nginx.http("/request-line"))
        #expect(response.headerFields[HTTPField.Name("Via")!] == nil, "through the tunnel, not forwarded: \(response.headerFields)")
        #expect(String(decoding: data, as: UTF8.self) == "uri=/request-line proxy-authorization=\n", "the credentials stay with the CONNECT")
        // Without credentials, the tunnel is refused, naming the proxy.
        proxy.user = nil
        proxy.password = nil
        let refusing = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
            $0.handlerOptions[HTTPClientOptions.self].tunnelsThroughProxy = true
        }
        let url = try Nginx.http("/hello.txt")
        let error = await loadError { _ = try await refusing.data(from: url) }
        #expect(error?.url == url && error?.reason?.contains("refused the tunnel") == true, "\(String(describing: error))")
    }

    @Test("An https request goes through a CONNECT tunnel: TLS with the server itself, the proxy's credentials to the proxy alone")
    func tunnelsHTTPS() async throws {
        let proxies = try proxies()
        let root = try Nginx.require().root
        let open = try session(HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.port))
        let (data, response) = try await open.data(from: Nginx.https("/300k.bin"))
        #expect(response.status == .ok)
        #expect(response.headerFields[HTTPField.Name("Via")!] == nil, "inside the tunnel the proxy sees nothing to add to")
        #expect(Bytes.difference(data, try Data(contentsOf: URL(fileURLWithPath: root + "/300k.bin"))) == nil)

        let url = try Nginx.https("/hello.txt")
        let refused = await loadError { _ = try await session(HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.authPort)).data(from: url) }
        #expect(refused?.code == .userAuthenticationRequired, "\(String(describing: refused))")
        #expect(refused?.url == url)
        #expect(refused?.reason?.contains("the proxy 127.0.0.1:\(proxies.authPort) refused the tunnel to localhost:") == true, "\(String(describing: refused))")
        let authorized = try session(HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.authPort, user: "user", password: "secret"))
        let (hello, _) = try await authorized.data(from: url)
        #expect(String(decoding: hello, as: UTF8.self) == "Hello from nginx\n")
    }

    @Test("Through a tunnel, with one proxy for http and https (as -x sets), the server gets the path and never the proxy's credentials, over HTTP/1.1 and HTTP/2")
    func tunnelKeepsProxyToItself() async throws {
        let proxies = try proxies()
        let nginx = try Nginx.require()
        let authorized = try session(HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.authPort, user: "user", password: "secret"))
        for port in [nginx.httpsPort, nginx.h2Port] {
            let (data, response) = try await authorized.data(from: URL(string: "https://localhost:\(port)/request-line")!)
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "uri=/request-line proxy-authorization=\n", "port \(port)")
        }
        // An http request names its whole URL to the proxy, which takes the credentials off before nginx.
        let (plain, _) = try await authorized.data(from: Nginx.http("/request-line"))
        #expect(String(decoding: plain, as: UTF8.self) == "uri=/request-line proxy-authorization=\n")
    }

    @Test("A proxy asking for credentials answers 407 to an http request without them; with them, the request goes through")
    func forwardAuthentication() async throws {
        let port = try proxies().authPort
        let (_, denied) = try await session(HTTPClientOptions.Proxy(host: "127.0.0.1", port: port)).data(from: Nginx.http("/hello.txt"))
        #expect(denied.status.map(\.code) == 407)
        #expect(denied.headerFields[HTTPField.Name("Proxy-Authenticate")!]?.hasPrefix("Basic") == true)
        let proxy = try #require(HTTPClientOptions.Proxy("http://user:secret@127.0.0.1:\(port)"))
        let (data, response) = try await session(proxy).data(from: Nginx.http("/hello.txt"))
        #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
    }

    @Test("Through an HTTPS proxy (https://, TLS to the proxy): http forwarded and https tunnelled, TLS inside TLS; with its login; its certificate checked")
    func httpsProxy() async throws {
        let proxies = try proxies()
        let proxy = try #require(HTTPClientOptions.Proxy("https://localhost:\(proxies.tlsPort)"))
        #expect(proxy.usesTLS && proxy.kind == .http)
        let session = try session(proxy)
        let (plain, forwarded) = try await session.data(from: Nginx.http("/hello.txt"))
        #expect(forwarded.status == .ok && String(decoding: plain, as: UTF8.self) == "Hello from nginx\n")
        // Forwarded by the proxy, which says so, as through the plain one.
        #expect(forwarded.headerFields[HTTPField.Name("Via")!]?.contains("tinyproxy") == true, "\(forwarded.headerFields)")
        let metrics = MetricsKeeper()
        let (secure, tunnelled) = try await session.data(from: Nginx.https("/hello.txt"), delegate: metrics)
        #expect(tunnelled.status == .ok && String(decoding: secure, as: UTF8.self) == "Hello from nginx\n")
        #expect(tunnelled.headerFields[HTTPField.Name("Via")!] == nil, "a tunnel's response comes from the server itself")
        // Through the proxy's port: the connection's other end.
        #expect(metrics.ports.withLock { $0 } == [proxies.tlsPort], "\(metrics.ports.withLock { $0 })")

        let (_, denied) = try await self.session(HTTPClientOptions.Proxy("https://localhost:\(proxies.tlsAuthPort)")).data(from: Nginx.http("/hello.txt"))
        #expect(denied.status.map(\.code) == 407)
        let login = try self.session(HTTPClientOptions.Proxy("https://user:secret@localhost:\(proxies.tlsAuthPort)"))
        for url in [try Nginx.http("/hello.txt"), try Nginx.https("/hello.txt")] {
            let (data, response) = try await login.data(from: url)
            #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "Hello from nginx\n", "\(url)")
        }

        // The proxy's certificate is checked against the session's trust roots and the proxy's name: 127.0.0.1 is not a
        // name the certificate has (localhost alone), and a session without the test CA trusts it under no name.
        for (host, trusting, code) in [("127.0.0.1", true, LoadError.Code.serverCertificateWrongHost), ("localhost", false, .serverCertificateUntrusted)] {
            let proxy = try #require(HTTPClientOptions.Proxy("https://\(host):\(proxies.tlsPort)"))
            let session = try Nginx.session {
                $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
                if !trusting { $0.handlerOptions[HTTPClientOptions.self].tls.additionalTrustRootsPEMFile = nil }
            }
            // By the name the certificate has, so that a message naming the server's host would be seen.
            let url = URL(string: "http://localhost:\(try Nginx.require().httpPort)/hello.txt")!
            let error = await loadError { _ = try await session.data(from: url) }
            #expect(error?.code == code, "\(String(describing: error))")
            #expect(error?.url == url)
            #expect(error?.reason?.hasPrefix("the proxy \(host):\(proxies.tlsPort) (TLS): ") == true, "\(String(describing: error?.reason))")
            // Said of the proxy: the name it was reached by, never the server's (localhost, a name the certificate has).
            #expect(trusting == (error?.reason?.hasSuffix("the certificate does not name the host 127.0.0.1") == true), "\(String(describing: error?.reason))")
        }
    }

    /// Keeps the remote port of each exchange's connection.
    private final class MetricsKeeper: LoadTaskDelegate {
        let ports = Locked<[Int?]>([])
        func loadTask(_ task: LoadTask, didFinishCollecting metrics: LoadTaskMetrics) {
            ports.withLock { $0 += metrics.transactions.map(\.remotePort) }
        }
    }

    /// Records each server-trust question's leaf certificate, and pins the server's.
    private final class Pinning: LoaderSessionDelegate {
        let pinned: Data
        let seen = Locked<[Data]>([])
        init(_ pinned: Data) { self.pinned = pinned }
        func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
            guard let leaf = challenge.serverTrust?.certificates.first else { return .performDefaultHandling }
            seen.withLock { $0.append(leaf) }
            return leaf == pinned ? .performDefaultHandling : .rejectProtectionSpace
        }
    }

    /// The DER bytes of the first certificate in the test servers' PEM file `name`.
    private func der(_ name: String) throws -> Data {
        try derOfPEM(URL(fileURLWithPath: try Nginx.require().caFile).deletingLastPathComponent().appendingPathComponent(name).path)
    }

    @Test("Through an HTTPS proxy the server-trust question is about the server's certificate, not the proxy's: a pin of the server's loads")
    func httpsProxyTrustQuestion() async throws {
        let proxies = try proxies()
        let server = try der("server.pem")
        #expect(try der("proxy.pem") != server, "the proxy shows a certificate of its own")
        let session = try self.session(HTTPClientOptions.Proxy("https://localhost:\(proxies.tlsPort)"))
        let pinning = Pinning(server)
        let (data, response) = try await session.data(from: Nginx.https("/hello.txt"), delegate: pinning)
        #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(pinning.seen.withLock { $0 } == [server], "the delegate was shown another certificate")
        // That connection was the proxy's (the next load goes on it).
        let metrics = MetricsKeeper()
        _ = try await session.data(from: Nginx.https("/hello.txt"), delegate: metrics)
        #expect(metrics.ports.withLock { $0 } == [proxies.tlsPort], "not through the proxy: \(metrics.ports.withLock { $0 })")
    }

    @Test("An HTTPS proxy that wants a client certificate (TLS 1.3: its refusal comes after the handshake) fails naming the proxy; Proxy.tls shows it one, the request's own TLS settings none")
    func httpsProxyClientCertificate() async throws {
        let proxies = try proxies()
        let nginx = try Nginx.require()
        let folder = URL(fileURLWithPath: nginx.caFile).deletingLastPathComponent()
        var proxy = try #require(HTTPClientOptions.Proxy("https://localhost:\(proxies.tlsClientCertificatePort)"))
        for url in [try Nginx.http("/hello.txt"), try Nginx.https("/hello.txt")] {
            let error = await loadError { _ = try await session(proxy).data(from: url) }
            #expect(error?.code == .clientCertificateRequired, "\(url): \(String(describing: error))")
            #expect(error?.url == url)
            #expect(error?.reason?.hasPrefix("the proxy localhost:\(proxies.tlsClientCertificatePort) (TLS): it asks for a TLS client certificate") == true,
                    "\(url): \(String(describing: error?.reason))")
        }
        var tls = HTTPClientOptions.TLSOptions()
        tls.additionalTrustRootsPEMFile = nginx.caFile
        tls.clientCertificatePEMFile = folder.appendingPathComponent("client.pem").path
        tls.clientPrivateKeyPEMFile = folder.appendingPathComponent("client.key").path
        proxy.tls = tls
        for url in [try Nginx.http("/hello.txt"), try Nginx.https("/hello.txt")] {
            let (data, response) = try await session(proxy).data(from: url)
            #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "Hello from nginx\n", "\(url)")
        }
    }

    @Test("A proxy that cannot be reached fails the load with cannotConnectToHost naming the URL and the proxy; one whose name is not found, with cannotFindHost and a ProxyFailure")
    func unreachableProxy() async throws {
        let port = LoopbackPorts.closed()
        for url in [try Nginx.http("/hello.txt"), try Nginx.https("/hello.txt")] {
            let error = await loadError { _ = try await session(HTTPClientOptions.Proxy(host: "127.0.0.1", port: port)).data(from: url) }
            #expect(error?.code == .cannotConnectToHost, "\(String(describing: error))")
            #expect(error?.url == url)
            #expect(error?.reason?.hasPrefix("the proxy 127.0.0.1:\(port): ") == true, "\(String(describing: error))")
            #expect((error?.underlying as? POSIXError)?.code == .ECONNREFUSED, "\(String(describing: error?.underlying))")
        }
        // A proxy whose name is not found: cannotFindHost, its underlying a ProxyFailure of the lookup, not the server's.
        let url = try Nginx.http("/hello.txt")
        let unnamed = await loadError { _ = try await session(HTTPClientOptions.Proxy(host: "no-such-proxy.invalid", port: 3128)).data(from: url) }
        let failure = unnamed?.underlying as? ProxyFailure
        #expect(unnamed?.code == .cannotFindHost && failure?.step == .nameLookup && failure?.proxy == "no-such-proxy.invalid:3128",
                "\(String(describing: unnamed))")
    }

    @Test("Hosts in noProxy, and a request that sets no proxy, go directly")
    func bypass() async throws {
        let unreachable = HTTPClientOptions.Proxy(host: "127.0.0.1", port: LoopbackPorts.closed())
        let (data, response) = try await session(unreachable, noProxy: ["example.com", "127.0.0.1"]).data(from: Nginx.http("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.headerFields[HTTPField.Name("Via")!] == nil)
        var request = LoadRequest(url: try Nginx.https("/hello.txt"))
        request.options[HTTPClientOptions.self].httpsProxy = nil
        let (direct, _) = try await session(unreachable).data(for: request)
        #expect(String(decoding: direct, as: UTF8.self) == "Hello from nginx\n")
    }

    @Test("Through a SOCKS5 proxy (dante) http and https open a tunnel, the proxy resolving the name; a target it cannot reach is named")
    func socks() async throws {
        let proxies = try proxies()
        let nginx = try Nginx.require()
        let proxy = try #require(HTTPClientOptions.Proxy("socks5h://127.0.0.1:\(proxies.socksPort)"))
        #expect(proxy.kind == .socks5)
        let session = try session(proxy)
        let log = SOCKSLog(proxies.socksLog)
        let (data, response) = try await session.data(from: URL(string: "http://localhost:\(nginx.httpPort)/hello.txt")!)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.headerFields[HTTPField.Name("Via")!] == nil)
        #expect(await log.tunnelled(to: nginx.httpPort), "dante logged no tunnel to nginx's http port")
        let (secure, _) = try await session.data(from: Nginx.https("/300k.bin"))
        #expect(Bytes.difference(secure, try Data(contentsOf: URL(fileURLWithPath: nginx.root + "/300k.bin"))) == nil)
        #expect(await log.tunnelled(to: nginx.httpsPort), "dante logged no tunnel to nginx's https port")

        // A name longer than SOCKS5's 255 bytes is refused, not sent (NIOSOCKS would trap on it).
        let long = URL(string: "http://" + String(repeating: "a.", count: 140) + "test/")!
        let tooLong = await loadError { _ = try await session.data(from: long) }
        #expect(tooLong?.code == .badURL && tooLong?.reason?.contains("255 bytes") == true, "\(String(describing: tooLong))")

        let closed = LoopbackPorts.closed()
        let url = URL(string: "http://127.0.0.1:\(closed)/")!
        let error = await loadError { _ = try await session.data(from: url) }
        #expect(error?.code == .cannotConnectToHost, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(error?.reason?.hasPrefix("the SOCKS proxy 127.0.0.1:\(proxies.socksPort) could not connect to 127.0.0.1:\(closed)") == true, "\(String(describing: error))")
    }

    @Test("socks5:// resolves the server's name here and gives the proxy its address, as curl's; socks5h:// gives the proxy the name")
    func socksLocalResolution() async throws {
        let proxies = try proxies()
        let nginx = try Nginx.require()
        let local = try #require(HTTPClientOptions.Proxy("socks5://127.0.0.1:\(proxies.socksPort)"))
        #expect(local.kind == .socks5 && local.resolvesNamesLocally)
        #expect(HTTPClientOptions.Proxy("socks5h://127.0.0.1:\(proxies.socksPort)")?.resolvesNamesLocally == false)
        let log = SOCKSLog(proxies.socksLog)
        let (data, _) = try await session(local).data(from: URL(string: "http://localhost:\(nginx.httpPort)/hello.txt")!)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(await log.tunnelled(to: nginx.httpPort), "dante logged no tunnel to nginx's http port")
        // A name nobody resolves tells who tried: this end, before the proxy is reached, or the proxy.
        let nowhere = URL(string: "http://no-such-host.invalid/")!
        let here = await loadError { _ = try await session(local).data(from: nowhere) }
        #expect(here?.code == .cannotFindHost && here?.reason?.contains("could not be resolved here") == true, "\(String(describing: here))")
        #expect((here?.underlying as? ProxyFailure)?.step == .socksHandshake, "the SOCKS proxy could not be asked (curl's 97): \(String(describing: here?.underlying))")
        let remote = try #require(HTTPClientOptions.Proxy("socks5h://127.0.0.1:\(proxies.socksPort)"))
        let there = await loadError { _ = try await session(remote).data(from: nowhere) }
        #expect(there != nil && there?.reason?.contains("could not be resolved here") != true, "\(String(describing: there))")
    }

    @Test("Through a SOCKS5 proxy that asks for a user name and password (dante), the right ones open the tunnel; wrong ones, none, or ones too long fail naming the proxy")
    func socksLogin() async throws {
        let proxies = try proxies()
        let nginx = try Nginx.require()
        let url = URL(string: "http://localhost:\(nginx.httpPort)/hello.txt")!
        let login = try #require(proxies.socksLogin, "dante asking for a login could not be started (it needs root)")
        let name = "127.0.0.1:\(login.port)"
        let right = try #require(HTTPClientOptions.Proxy("socks5h://\(login.user):\(login.password)@\(name)"))
        let (data, _) = try await session(right).data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        let (secure, _) = try await session(right).data(from: Nginx.https("/300k.bin"))
        #expect(Bytes.difference(secure, try Data(contentsOf: URL(fileURLWithPath: nginx.root + "/300k.bin"))) == nil)

        var wrong = right
        wrong.password = "not the secret"
        let refused = await loadError { _ = try await session(wrong).data(from: url) }
        #expect(refused?.code == .userAuthenticationRequired, "\(String(describing: refused))")
        #expect((refused?.underlying as? ProxyFailure)?.step == .socksHandshake, "\(String(describing: refused?.underlying))")
        #expect(refused?.url == url)
        #expect(refused?.reason?.hasPrefix("the SOCKS proxy \(name) refused the user name and password") == true, "\(String(describing: refused))")

        let none = await loadError { _ = try await session(HTTPClientOptions.Proxy(.socks5, host: "127.0.0.1", port: login.port)).data(from: url) }
        #expect(none?.code == .userAuthenticationRequired, "\(String(describing: none))")
        #expect(none?.reason?.hasPrefix("the SOCKS proxy \(name) asks for authentication") == true, "\(String(describing: none))")

        for user in [String(repeating: "u", count: 256), ""] {
            var unsendable = right
            unsendable.user = user
            let error = await loadError { _ = try await session(unsendable).data(from: url) }
            #expect(error?.code == .userAuthenticationRequired && error?.reason?.contains("1 to 255 bytes") == true, "\(String(describing: error))")
        }

        // A proxy that takes no authentication is still reached with credentials: it picks none, and the tunnel opens.
        let open = HTTPClientOptions.Proxy(.socks5, host: "127.0.0.1", port: proxies.socksPort, user: login.user, password: login.password)
        let (plain, _) = try await session(open).data(from: url)
        #expect(String(decoding: plain, as: UTF8.self) == "Hello from nginx\n")
    }

    @Test("The SOCKS5 login's exchange: the greeting offers both methods, messages may come in pieces, another method's answer passes on untouched")
    func socksLoginExchange() throws {
        var login = try #require(SOCKSLogin(user: "ab", password: "xyz"))
        #expect(login.greeting() == [5, 2, 0, 2])
        #expect(login.greeting() == nil, "one greeting")
        #expect(login.receive([5]) == .wait)
        #expect(login.receive([2]) == .send([1, 2, 97, 98, 3, 120, 121, 122]))
        #expect(login.receive([1]) == .wait)
        #expect(login.receive([0]) == .forward([5, 0]), "the SOCKS handler hears that no authentication was picked")
        #expect(login.receive([5, 0, 0, 1]) == .forward([5, 0, 0, 1]), "the CONNECT reply passes untouched")

        var early = try #require(SOCKSLogin(user: "ab", password: ""))
        _ = early.greeting()
        #expect(early.receive([5, 2, 1]) == .send([1, 2, 97, 98, 0]))
        #expect(early.receive([]) == .wait, "the byte after the selection was kept")
        #expect(early.receive([0]) == .forward([5, 0]))

        var none = try #require(SOCKSLogin(user: "ab", password: "xyz"))
        _ = none.greeting()
        #expect(none.receive([5, 0xFF]) == .forward([5, 0xFF]), "no acceptable method: the SOCKS handler says so")
        var bad = try #require(SOCKSLogin(user: "ab", password: "xyz"))
        _ = bad.greeting()
        #expect(bad.receive([5, 2]) == .send([1, 2, 97, 98, 3, 120, 121, 122]))
        #expect(bad.receive([1, 1]) == .refused(1))
        #expect(SOCKSLogin(user: "u", password: String(repeating: "p", count: 256)) == nil)
        #expect(SOCKSLogin(user: "", password: "p") == nil, "RFC 1929: a user name of one byte at least")

        // A proxy that picks no authentication though a login was offered: the SOCKS handler goes on as usual.
        var unasked = try #require(SOCKSLogin(user: "ab", password: "xyz"))
        _ = unasked.greeting()
        #expect(unasked.receive([5, 0]) == .forward([5, 0]))
        #expect(unasked.state == .passing)
        // A refusal in two pieces.
        var split = try #require(SOCKSLogin(user: "ab", password: "xyz"))
        _ = split.greeting()
        _ = split.receive([5, 2])
        #expect(split.receive([1]) == .wait)
        #expect(split.receive([0xFF]) == .refused(0xFF))
    }

    @Test("Proxies are written as curl takes them; the environment's variables are read as curl reads them")
    func settings() {
        let full = HTTPClientOptions.Proxy("http://us%40er:p%3Ass@Proxy.Example:3128")
        #expect(full == HTTPClientOptions.Proxy(host: "proxy.example", port: 3128, user: "us@er", password: "p:ss"))
        #expect(HTTPClientOptions.Proxy("localhost") == HTTPClientOptions.Proxy(host: "localhost", port: 1080))
        #expect(HTTPClientOptions.Proxy("[::1]:8080") == HTTPClientOptions.Proxy(host: "::1", port: 8080))
        var locallyResolved = HTTPClientOptions.Proxy(.socks5, host: "localhost", port: 1080)
        locallyResolved.resolvesNamesLocally = true
        #expect(HTTPClientOptions.Proxy("socks5://localhost:1080") == locallyResolved)
        #expect(HTTPClientOptions.Proxy("SOCKS5H://localhost") == HTTPClientOptions.Proxy(.socks5, host: "localhost", port: 1080))
        #expect(HTTPClientOptions.Proxy("socks5h://us%40er:p%3Aw@localhost:1080")
                == HTTPClientOptions.Proxy(.socks5, host: "localhost", port: 1080, user: "us@er", password: "p:w"))
        #expect(HTTPClientOptions.Proxy("ftp://localhost:1080") == nil, "no proxy of another protocol")
        var overTLS = HTTPClientOptions.Proxy(host: "proxy.example", port: 443)
        overTLS.usesTLS = true
        #expect(HTTPClientOptions.Proxy("HTTPS://Proxy.Example") == overTLS, "an HTTPS proxy's port is 443 unless given")
        overTLS.port = 8443
        #expect(HTTPClientOptions.Proxy("https://proxy.example:8443") == overTLS)
        #expect(HTTPClientOptions.Proxy("http://localhost:99999") == nil)
        #expect(HTTPClientOptions.Proxy("") == nil)

        let environment = ["HTTP_PROXY": "http://cgi:1", "https_proxy": "secure:2", "ALL_PROXY": "all:3", "no_proxy": " a.test, .b.test ,"]
        #expect(HTTPClientOptions.Proxy.fromEnvironment(environment, scheme: "http")?.host == "all", "HTTP_PROXY is not read")
        #expect(HTTPClientOptions.Proxy.fromEnvironment(environment, scheme: "https")?.port == 2)
        #expect(HTTPClientOptions.Proxy.fromEnvironment(["http_proxy": "h:4"], scheme: "http")?.port == 4)
        #expect(HTTPClientOptions.Proxy.fromEnvironment([:], scheme: "http") == nil)
        let exceptions = HTTPClientOptions.Proxy.exceptions(fromEnvironment: environment)
        #expect(exceptions == ["a.test", ".b.test"])
        // Blanks separate entries too, as curl reads the list.
        #expect(HTTPClientOptions.Proxy.exceptions(fromEnvironment: ["no_proxy": "localhost 127.0.0.1\t.c.test"]) == ["localhost", "127.0.0.1", ".c.test"])
        #expect(HTTPClientOptions.Proxy.bypasses("www.a.test", exceptions: exceptions))
        #expect(HTTPClientOptions.Proxy.bypasses("b.test", exceptions: exceptions))
        #expect(!HTTPClientOptions.Proxy.bypasses("nota.test", exceptions: exceptions))
        #expect(HTTPClientOptions.Proxy.bypasses("::1", exceptions: ["[::1]"]))
        #expect(HTTPClientOptions.Proxy.bypasses("anything", exceptions: ["*"]))
        // Addresses by blocks (curl 7.86), and never by a suffix; a final dot left out on either side.
        #expect(HTTPClientOptions.Proxy.bypasses("10.1.2.3", exceptions: ["10.0.0.0/8"]))
        #expect(!HTTPClientOptions.Proxy.bypasses("10.1.2.3", exceptions: ["10.0.0.0/16"]))
        #expect(HTTPClientOptions.Proxy.bypasses("192.168.7.9", exceptions: ["192.168.0.0/17"]))
        #expect(HTTPClientOptions.Proxy.bypasses("fd00::5", exceptions: ["fd00::/8"]))
        #expect(HTTPClientOptions.Proxy.bypasses("fd00::5", exceptions: ["[fd00::]/8"]))
        #expect(!HTTPClientOptions.Proxy.bypasses("fe80::1", exceptions: ["fd00::/8", "10.0.0.0/8"]))
        #expect(!HTTPClientOptions.Proxy.bypasses("127.0.0.1", exceptions: ["0.0.1", "0.1"]))
        #expect(HTTPClientOptions.Proxy.bypasses("127.0.0.1", exceptions: ["127.0.0.1"]))
        #expect(HTTPClientOptions.Proxy.bypasses("intranet.corp.", exceptions: ["corp"]))
        #expect(HTTPClientOptions.Proxy.bypasses("www.example.com", exceptions: ["example.com."]))
    }

    @Test("The answer to CONNECT is read across reads; one not HTTP, or too long, is refused")
    func tunnelAnswers() {
        var split = TunnelResponse()
        #expect(split.append(ByteBuffer(string: "HTTP/1.0 200 Connection estab")) == .incomplete)
        #expect(split.append(ByteBuffer(string: "lished\r\nProxy-agent: x\r")) == .incomplete)
        #expect(split.append(ByteBuffer(string: "\n\r\n")) == .answered(status: 200, reason: "Connection established", extraBytes: 0))
        var refused = TunnelResponse()
        #expect(refused.append(ByteBuffer(string: "HTTP/1.1 403 Forbidden\r\n\r\n<html>")) == .answered(status: 403, reason: "Forbidden", extraBytes: 6))
        var garbage = TunnelResponse()
        guard case .malformed = garbage.append(ByteBuffer(string: "SSH-2.0-OpenSSH\r\n\r\n")) else { Issue.record("not refused"); return }
        var endless = TunnelResponse()
        let line = ByteBuffer(string: "X-Filler: " + String(repeating: "x", count: 1_000) + "\r\n")
        var outcome = endless.append(ByteBuffer(string: "HTTP/1.1 200 OK\r\n"))
        for _ in 0..<20 where outcome == .incomplete { outcome = endless.append(line) }
        guard case .malformed = outcome else { Issue.record("a 20 KiB head was not refused: \(outcome)"); return }
    }
}
