import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import Synchronization
import TestSupport
import Testing

@Suite("http(s): against a real nginx")
struct HTTPNginxTests {
    @Test("GET returns the body, status and header fields")
    func get() async throws {
        let (data, response) = try await Nginx.session().data(from: Nginx.http("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.status == .ok)
        #expect(response.mimeType == "text/plain")
        #expect(response.expectedContentLength == 17)
        #expect(response.headerFields[HTTPField.Name("Server")!]?.hasPrefix("nginx") == true)
    }

    @Test("HTTPS with the test CA as an extra trust root")
    func https() async throws {
        let root = try Nginx.require().root
        let (data, response) = try await Nginx.session().data(from: Nginx.https("/300k.bin"))
        #expect(response.status == .ok)
        #expect(Bytes.difference(data, try Data(contentsOf: URL(fileURLWithPath: root + "/300k.bin"))) == nil)
    }

    @Test("A certificate from an unknown CA fails with serverCertificateUntrusted naming the URL")
    func untrusted() async throws {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        let url = try Nginx.https("/hello.txt")
        let error = await loadError { _ = try await LoaderSession(configuration: configuration).data(from: url) }
        #expect(error?.code == .serverCertificateUntrusted, "\(String(describing: error)) \(String(reflecting: error?.underlying))")
        #expect(error?.url == url)
    }

    @Test("A certificate for another host fails with serverCertificateWrongHost")
    func wrongHost() async throws {
        let port = try Nginx.require().httpsPort
        let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].resolve = ["wrong.example:\(port)": "127.0.0.1"] }
        let error = await loadError { _ = try await session.data(from: Nginx.https("/hello.txt", host: "wrong.example")) }
        #expect(error?.code == .serverCertificateWrongHost)
    }

    @Test("An expired certificate fails with serverCertificateHasBadDate naming the URL")
    func expired() async throws {
        let url = URL(string: "https://localhost:\(try Nginx.require().expiredPort)/hello.txt")!
        let error = await loadError { _ = try await Nginx.session().data(from: url) }
        #expect(error?.code == .serverCertificateHasBadDate, "\(String(describing: error))")
        #expect(error?.url == url)
    }

    @Test("addressFamily: a name resolves to the version asked for alone; an address of the other is cannotFindHost naming the URL; localhost and names under it are loopback with no lookup")
    func addressFamily() async throws {
        let nginx = try Nginx.require()
        let ipv4 = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].addressFamily = .ipv4 }
        let (data, _) = try await ipv4.data(from: URL(string: "http://localhost:\(nginx.httpPort)/hello.txt")!)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        let ipv6 = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].addressFamily = .ipv6 }
        let url = try Nginx.http("/hello.txt")
        let error = await loadError { _ = try await ipv6.data(from: url) }
        #expect(error?.code == .cannotFindHost, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(error?.reason?.contains("IPv6") == true, "\(String(describing: error?.reason))")
        // A WebSocket's handshake looks its name up alike: `localhost` over IPv6 is ::1 whatever the hosts file says
        // (RFC 6761), where the server, on 127.0.0.1 alone, refuses it.
        if let servers = TestServers.webSockets {
            let url = URL(string: "ws://localhost:\(servers.port)/echo")!
            let socketError = await loadError { _ = try await ipv6.webSocketTask(with: url).receive() }
            #expect(socketError?.code == .cannotConnectToHost, "\(String(describing: socketError))")
            let fourSocket = ipv4.webSocketTask(with: url)
            try await fourSocket.send(.string("four"))
            #expect(try await fourSocket.receive() == .string("four"))
            fourSocket.cancel(with: .normalClosure, reason: nil)
        }
        try #require(nginx.ipv6, "nginx has no [::1] listener: this machine has no IPv6 loopback")
        let loopback6 = URL(string: "http://[::1]:\(nginx.httpPort)/hello.txt")!
        let (six, _) = try await ipv6.data(from: loopback6)
        #expect(String(decoding: six, as: UTF8.self) == "Hello from nginx\n")
        // `localhost` and the names under it are the loopback addresses of the version asked for, or of either, with no
        // lookup (this machine's hosts file names no ::1 for localhost, and DNS knows no app.localhost).
        let metrics = RemoteAddressKept()
        for (session, host, address) in [(ipv6, "localhost", "::1"), (ipv6, "App.Localhost.", "::1"), (ipv4, "app.localhost", "127.0.0.1"),
                                         (try Nginx.session(), "app.localhost", nil), (try Nginx.session(), "localhost.", nil)] {
            let (body, _) = try await session.data(for: LoadRequest(url: URL(string: "http://\(host):\(nginx.httpPort)/hello.txt")!), delegate: metrics)
            #expect(String(decoding: body, as: UTF8.self) == "Hello from nginx\n", "\(host)")
            if let address { #expect(metrics.lastRemoteAddress == address, "\(host): \(String(describing: metrics.lastRemoteAddress))") }
        }
        let refused = await loadError { _ = try await ipv4.data(from: loopback6) }
        #expect(refused?.code == .cannotFindHost, "\(String(describing: refused))")
    }

    @Test("IPv6: a URL with [::1] loads from nginx's IPv6 listener")
    func ipv6() async throws {
        let nginx = try Nginx.require()
        // scripts/test-servers listens on [::1] whenever the kernel has IPv6 loopback; this machine must.
        try #require(nginx.ipv6, "nginx has no [::1] listener: this machine has no IPv6 loopback")
        let (data, response) = try await Nginx.session().data(from: URL(string: "http://[::1]:\(nginx.httpPort)/hello.txt")!)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.status == .ok)
    }

    @Test("A gzip response from nginx arrives decoded; asked for raw, it arrives as nginx sent it")
    func gzip() async throws {
        let original = try Data(contentsOf: URL(fileURLWithPath: try Nginx.require().root + "/gz/lines.txt"))
        let url = try Nginx.http("/gz/lines.txt")
        let (data, response) = try await Nginx.session().data(from: url)
        #expect(Bytes.difference(data, original) == nil)
        #expect(response.headerFields[.contentEncoding] == nil)

        var raw = LoadRequest(url: url)
        raw.headerFields[.acceptEncoding] = "gzip"
        let (compressed, rawResponse) = try await Nginx.session().data(for: raw)
        #expect(rawResponse.headerFields[.contentEncoding] == "gzip")
        #expect(compressed.prefix(2) == Data([0x1F, 0x8B]), "a gzip stream starts with its magic number")
        #expect(compressed.count < original.count / 3, "\(compressed.count) compressed bytes for \(original.count)")
    }

    @Test("A br or zstd response from nginx arrives decoded, over HTTP/1.1 and HTTP/2; asked for raw, it arrives as sent",
          arguments: [("br", "/br/"), ("zstd", "/zst/")])
    func compressedFile(coding: String, folder: String) async throws {
        let nginx = try Nginx.require()
        let original = try Data(contentsOf: URL(fileURLWithPath: nginx.root + "/gz/lines.txt"))
        // nginx has no brotli or zstd module here: it serves a file compressed now, with that coding (its location).
        let name = "lines-\(UUID().uuidString).txt"
        let file = URL(fileURLWithPath: nginx.root + folder + name)
        try (coding == "br" ? Compression.brotli(original) : Compression.zstd(original)).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for url in [try Nginx.http(folder + name), URL(string: "https://localhost:\(nginx.h2Port)\(folder)\(name)")!] {
            let (data, response) = try await Nginx.session().data(from: url)
            #expect(Bytes.difference(data, original) == nil, "\(url)")
            #expect(response.headerFields[.contentEncoding] == nil)
        }
        var raw = LoadRequest(url: try Nginx.http(folder + name))
        raw.headerFields[.acceptEncoding] = coding
        let (compressed, rawResponse) = try await Nginx.session().data(for: raw)
        #expect(rawResponse.headerFields[.contentEncoding] == coding)
        #expect(compressed.count < original.count / 3, "\(compressed.count) compressed bytes for \(original.count)")
    }

    @Test("A 32 MiB random body, its chunks all kept until the end, arrives byte for byte, over http and https")
    func largeBodyKeptWhole() async throws {
        // Chunks that fill most of a read buffer are handed on in it: keeping every one alive while the
        // connection reads on checks that no buffer is reused or changed under a chunk still held.
        try await ExclusiveGate.memory.exclusive {
            let expected = try Data(contentsOf: URL(fileURLWithPath: try Nginx.require().root + "/32m.bin"))
            for url in [try Nginx.http("/32m.bin"), try Nginx.https("/32m.bin")] {
                let (bytes, response) = try await Nginx.session().bytes(from: url)
                #expect(response.expectedContentLength == Int64(expected.count))
                var chunks: [Data] = []
                for try await chunk in bytes.chunks { chunks.append(chunk) }
                var received = Data(capacity: expected.count)
                for chunk in chunks { received.append(chunk) }
                #expect(Bytes.difference(received, expected) == nil, "\(url)")
            }
        }
    }

    @Test("Turning verification off (curl's -k) accepts any certificate")
    func insecure() async throws {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.handlerOptions[HTTPClientOptions.self].tls.verifiesCertificates = false
        let (data, _) = try await LoaderSession(configuration: configuration).data(from: Nginx.https("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
    }

    @Test("A request that sets one HTTP setting keeps its session's others: the trust root, the host override")
    func requestOptionsKeepSessionOnes() async throws {
        let port = try Nginx.require().httpsPort
        let session = try Nginx.session {
            // The name resolves only through the session's override.
            $0.handlerOptions[HTTPClientOptions.self].resolve["localhost.invalid:\(port)"] = "127.0.0.1"
        }
        var request = LoadRequest(url: try Nginx.https("/hello.txt"))
        request.options[HTTPClientOptions.self].connectTimeout = 20
        let (data, _) = try await session.data(for: request)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")

        let merged = HTTPClientOptions.merged(request.options[HTTPClientOptions.self],
                                              over: session.configuration.handlerOptions[HTTPClientOptions.self])
        #expect(merged.connectTimeout == 20)
        #expect(merged.tls.additionalTrustRootsPEMFile == (try Nginx.require().caFile))
        #expect(merged.resolve == ["localhost.invalid:\(port)": "127.0.0.1"])
        var modern = HTTPClientOptions()
        modern.tls.minimumVersion = .tls13
        #expect(HTTPClientOptions.merged(request.options[HTTPClientOptions.self], over: modern).tls.minimumVersion == .tls13)
        // What a request sets wins, a default it sets again included.
        var strict = HTTPClientOptions()
        strict.tls.verifiesCertificates = true
        var lax = HTTPClientOptions()
        lax.tls.verifiesCertificates = false
        #expect(HTTPClientOptions.merged(strict, over: lax).tls.verifiesCertificates == true)
        #expect(HTTPClientOptions.merged(HTTPClientOptions(), over: lax).tls.verifiesCertificates == false)
        // Every setting is one `merged(_:over:)` knows: a new one must be added there, or a request that does not
        // set it would take the default over its session's.
        #expect(Mirror(reflecting: HTTPClientOptions()).children.count == 15)
        // Connection redirects merge as the host overrides do: the session's, with the request's over them.
        var redirected = HTTPClientOptions()
        redirected.connectTo = ["a:1": "b:2", "c:3": "d:4"]
        var ownRedirect = HTTPClientOptions()
        ownRedirect.connectTo = ["a:1": "e:5"]
        #expect(HTTPClientOptions.merged(HTTPClientOptions(), over: redirected).connectTo == redirected.connectTo)
        #expect(HTTPClientOptions.merged(ownRedirect, over: redirected).connectTo == ["a:1": "e:5", "c:3": "d:4"])
        // A session's Unix socket holds for a request that sets none; one that sets `nil` goes by TCP.
        var socketed = HTTPClientOptions()
        socketed.unixSocketPath = "/run/site.sock"
        #expect(HTTPClientOptions.merged(HTTPClientOptions(), over: socketed).unixSocketPath == "/run/site.sock")
        var byTCP = HTTPClientOptions()
        byTCP.unixSocketPath = nil
        #expect(HTTPClientOptions.merged(byTCP, over: socketed).unixSocketPath == nil)
        var sixOnly = HTTPClientOptions()
        sixOnly.addressFamily = .ipv6
        #expect(HTTPClientOptions.merged(HTTPClientOptions(), over: sixOnly).addressFamily == .ipv6)
        var anonymous = HTTPClientOptions()
        anonymous.userAgent = nil
        #expect(HTTPClientOptions.merged(HTTPClientOptions(), over: anonymous).userAgent == nil)
        #expect(HTTPClientOptions.merged(anonymous, over: HTTPClientOptions()).userAgent == nil)
        var http1Only = HTTPClientOptions()
        http1Only.allowsHTTP2 = false
        #expect(HTTPClientOptions.merged(HTTPClientOptions(), over: http1Only).allowsHTTP2 == false)
        #expect(HTTPClientOptions.merged(http1Only, over: HTTPClientOptions()).allowsHTTP2 == false)
        var proxied = HTTPClientOptions()
        proxied.httpProxy = HTTPClientOptions.Proxy(host: "proxy.test", port: 3128)
        proxied.httpsProxy = HTTPClientOptions.Proxy(host: "secure.test", port: 3129)
        proxied.noProxy = ["localhost"]
        #expect(HTTPClientOptions.merged(request.options[HTTPClientOptions.self], over: proxied).httpProxy?.host == "proxy.test")
        #expect(HTTPClientOptions.merged(request.options[HTTPClientOptions.self], over: proxied).httpsProxy?.port == 3129)
        #expect(HTTPClientOptions.merged(request.options[HTTPClientOptions.self], over: proxied).noProxy == ["localhost"])
        var direct = HTTPClientOptions()
        direct.httpsProxy = nil
        #expect(HTTPClientOptions.merged(direct, over: proxied).httpsProxy == nil, "a request that sets no proxy goes directly")
        #expect(Mirror(reflecting: HTTPClientOptions.TLSOptions()).children.count == 8)
        var pinned = HTTPClientOptions()
        pinned.tls.pinnedPublicKeys = ["sha256//AAAA"]
        #expect(HTTPClientOptions.merged(HTTPClientOptions(), over: pinned).tls.pinnedPublicKeys == ["sha256//AAAA"], "a request keeps its session's pins")
        var unpinned = HTTPClientOptions()
        unpinned.tls.pinnedPublicKeys = []
        #expect(HTTPClientOptions.merged(unpinned, over: pinned).tls.pinnedPublicKeys.isEmpty, "a request may set none")
        var identified = HTTPClientOptions()
        identified.tls.clientCertificatePEMFile = "/client.pem"
        identified.tls.clientPrivateKeyPEMFile = "/client.key"
        identified.tls.clientPrivateKeyPassphrase = "phrase"
        let inherited = HTTPClientOptions.merged(request.options[HTTPClientOptions.self], over: identified).tls
        #expect(inherited.clientCertificatePEMFile == "/client.pem" && inherited.clientPrivateKeyPEMFile == "/client.key"
                && inherited.clientPrivateKeyPassphrase == "phrase", "a request that sets no client certificate shows its session's")
        // Equal when they read the same, set or not: requests that set a default share a pool.
        var explicit = HTTPClientOptions()
        explicit.connectTimeout = 30
        #expect(explicit == HTTPClientOptions() && explicit.hashValue == HTTPClientOptions().hashValue)

        let viaOverride = LoadRequest(url: URL(string: "https://localhost.invalid:\(port)/hello.txt")!)
        var overridden = viaOverride
        overridden.options[HTTPClientOptions.self].connectTimeout = 5
        let error = await loadError { _ = try await session.data(for: overridden) }
        // The override connects, and the certificate (for localhost) does not match the name asked for.
        #expect(error?.code == .serverCertificateWrongHost, "\(String(describing: error))")
    }

    @Test("Sequential requests reuse one keep-alive connection (nginx's connection number stays the same), over TLS too, whatever their framing",
          arguments: ["http", "https"])
    func keepAlive(scheme: String) async throws {
        let session = try Nginx.session()
        var connections: Set<String> = []
        // A body of known length, no body (HEAD, 204), and a chunked one (gzip on the fly): each ends where a read does.
        let loads: [(String, HTTPRequest.Method)] = [("/1k.bin", .get), ("/1k.bin", .head), ("/status/204", .get), ("/gz/lines.txt", .get)]
        for _ in 0..<2 {
            for (path, method) in loads {
                var request = LoadRequest(url: scheme == "http" ? try Nginx.http(path) : try Nginx.https(path), method: method)
                request.headerFields[.acceptEncoding] = "gzip"
                let (_, response) = try await session.data(for: request)
                connections.insert(response.headerFields[HTTPField.Name("X-Connection")!] ?? "?")
            }
        }
        #expect(connections.count == 1, "nginx saw connections \(connections.sorted())")
    }

    @Test("200 concurrent requests over a pool of 8 connections each get the right body")
    func concurrentOverPoolLimit() async throws {
        // Many allocations at once: kept apart from the tests that measure peak memory.
        try await ExclusiveGate.memory.exclusive {
            let root = try Nginx.require().root
            let expected = try Data(contentsOf: URL(fileURLWithPath: root + "/1k.bin"))
            let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].maximumConnectionsPerHost = 8 }
            let url = try Nginx.https("/1k.bin")
            let connections = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        let (data, response) = try await session.data(from: url)
                        #expect(Bytes.difference(data, expected) == nil)
                        return response.headerFields[HTTPField.Name("X-Connection")!] ?? "?"
                    }
                }
                var seen: Set<String> = []
                for try await connection in group { seen.insert(connection) }
                return seen
            }
            #expect(connections.count <= 8, "\(connections.count) connections were used")
        }
    }

    @Test("HEAD, 204 and 404: statuses are responses, with or without bodies")
    func statuses() async throws {
        let session = try Nginx.session()
        let (headBody, head) = try await session.data(for: LoadRequest(url: Nginx.http("/hello.txt"), method: .head))
        #expect(headBody.isEmpty)
        #expect(head.expectedContentLength == 17)
        let (emptyBody, noContent) = try await session.data(from: Nginx.http("/status/204"))
        #expect(noContent.status == .noContent)
        #expect(emptyBody.isEmpty)
        let (missingBody, missing) = try await session.data(from: Nginx.http("/status/404"))
        #expect(missing.status == .notFound)
        #expect(String(decoding: missingBody, as: UTF8.self) == "not here\n")
    }

    @Test("A 301 is followed to its target; a redirect loop fails with httpTooManyRedirects")
    func redirects() async throws {
        let session = try Nginx.session()
        let (data, response) = try await session.data(from: Nginx.http("/redirect"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.url.path == "/hello.txt")
        let loop = try Nginx.http("/loop")
        let error = await loadError { _ = try await session.data(from: loop) }
        #expect(error?.code == .httpTooManyRedirects)
    }

    @Test("A 401 reaches the caller as a response (nobody answered the challenge), never a hang")
    func unauthorized() async throws {
        let (_, response) = try await Nginx.session().data(from: Nginx.http("/private"))
        #expect(response.status == .unauthorized)
        #expect(response.headerFields[.wwwAuthenticate]?.hasPrefix("Basic") == true)
    }

    @Test("A 1 GiB download streams through bytes(from:) with peak memory growth under 64 MiB")
    func gigabyteStreamsInBoundedMemory() async throws {
        let session = try Nginx.session()
        let url = try Nginx.http("/1g.bin")
        let (growth, count) = try await ResourceProbes.measuringPeakGrowth {
            let (bytes, response) = try await session.bytes(from: url)
            #expect(response.expectedContentLength == 1 << 30)
            var count = 0
            for try await chunk in bytes.chunks { count += chunk.count }
            return count
        }
        #expect(count == 1 << 30)
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak memory grew by \(growth >> 20) MiB")
    }
}

/// The remote address of the last exchange a task told of.
private final class RemoteAddressKept: LoadTaskDelegate {
    private let address = Mutex<String?>(nil)

    var lastRemoteAddress: String? { address.withLock { $0 } }

    func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics) {
        address.withLock { $0 = transaction.remoteAddress }
    }
}
