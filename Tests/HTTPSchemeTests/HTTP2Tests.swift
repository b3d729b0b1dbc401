import Foundation
@testable import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

@Suite("https: HTTP/2, negotiated with nginx by ALPN")
struct HTTP2Tests {
    private static let connection = HTTPField.Name("X-Connection")!

    private func h2(_ path: String, port: Int? = nil) throws -> URL {
        URL(string: "https://localhost:\(try port ?? Nginx.require().h2Port)\(path)")!
    }

    @Test("A server that offers h2 gets it: the body, status and fields arrive, and the response names the protocol")
    func negotiated() async throws {
        let session = try Nginx.session()
        let (data, response) = try await session.data(from: h2("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.status == .ok)
        #expect(response.networkProtocolName == "h2")
        #expect(response.expectedContentLength == 17)
        #expect(response.mimeType == "text/plain")
        #expect(response.headerFields[HTTPField.Name("Server")!]?.hasPrefix("nginx") == true)
    }

    @Test("A server that offers HTTP/1.1 alone gets it, and allowsHTTP2 = false keeps an h2 server to HTTP/1.1")
    func fallback() async throws {
        let (_, plain) = try await Nginx.session().data(from: Nginx.https("/hello.txt"))
        #expect(plain.networkProtocolName == "http/1.1")
        let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].allowsHTTP2 = false }
        let (data, response) = try await session.data(from: h2("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.networkProtocolName == "http/1.1")
    }

    @Test("32 loads at once share one connection, each getting its own body")
    func multiplexed() async throws {
        let session = try Nginx.session()
        let root = try Nginx.require().root
        let paths = (0..<32).map { $0 % 2 == 0 ? "/hello.txt" : "/300k.bin" }
        let expected = try Dictionary(uniqueKeysWithValues: Set(paths).map { ($0, try Data(contentsOf: URL(fileURLWithPath: root + $0))) })
        let results = try await withThrowingTaskGroup(of: (String, Data, LoadResponse).self) { group in
            for path in paths {
                group.addTask { let (data, response) = try await session.data(from: h2(path)); return (path, data, response) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 32)
        for (path, data, response) in results {
            #expect(response.networkProtocolName == "h2")
            #expect(Bytes.difference(data, expected[path]!) == nil, "\(path)")
        }
        let connections = Set(results.compactMap { $0.2.headerFields[Self.connection] })
        #expect(connections.count == 1, "the burst waited for the first connection to tell its protocol: \(connections)")
    }

    @Test("With one connection allowed, 24 loads at once against a server that takes 4 streams at a time all arrive over it: the rest wait for streams")
    func moreThanTheStreamLimit() async throws {
        let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].maximumConnectionsPerHost = 1 }
        let expected = try Data(contentsOf: URL(fileURLWithPath: Nginx.require().root + "/hello.txt"))
        let port = try Nginx.require().h2FewStreamsPort
        let results = try await withThrowingTaskGroup(of: (Data, LoadResponse).self) { group in
            for _ in 0..<24 {
                group.addTask { try await session.data(from: h2("/hello.txt", port: port)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 24)
        #expect(results.allSatisfy { $0.0 == expected && $0.1.status == .ok && $0.1.networkProtocolName == "h2" })
        let connections = Set(results.compactMap { $0.1.headerFields[Self.connection] })
        #expect(connections.count == 1, "\(connections)")
    }

    @Test("Loads one after another reuse the connection: 150 of them, more than its 100 streams, so each gives its stream back")
    func reused() async throws {
        let session = try Nginx.session()
        var connections: Set<String> = []
        for _ in 0..<150 {
            let (_, response) = try await session.data(from: h2("/hello.txt"))
            connections.insert(try #require(response.headerFields[Self.connection]))
        }
        #expect(connections.count == 1, "\(connections)")
    }

    @Test("HEAD, a 404, a 204 and a followed redirect over HTTP/2")
    func statuses() async throws {
        let session = try Nginx.session()
        var head = LoadRequest(url: try h2("/300k.bin"))
        head.method = .head
        let (headBody, headResponse) = try await session.data(for: head)
        #expect(headResponse.status == .ok && headBody.isEmpty)
        let size = try FileManager.default.attributesOfItem(atPath: Nginx.require().root + "/300k.bin")[.size] as? Int
        #expect(headResponse.expectedContentLength == size.map(Int64.init))
        let (missing, missingResponse) = try await session.data(from: h2("/status/404"))
        #expect(missingResponse.status == .notFound && String(decoding: missing, as: UTF8.self) == "not here\n")
        let (empty, emptyResponse) = try await session.data(from: h2("/status/204"))
        #expect(emptyResponse.status == .noContent && empty.isEmpty)
        let (moved, movedResponse) = try await session.data(from: h2("/redirect"))
        #expect(String(decoding: moved, as: UTF8.self) == "Hello from nginx\n")
        #expect(movedResponse.url == (try h2("/hello.txt")))
    }

    @Test("A request body goes up on its stream: a buffer, and a 3 MiB file read as it is sent",
          .enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/nginx/modules/ngx_http_echo_module.so"),
                   "nginx's echo module (libnginx-mod-http-echo) gives /echo-body"))
    func uploads() async throws {
        let session = try Nginx.session()
        var post = LoadRequest(url: try h2("/echo-body"))
        post.method = .post
        post.headerFields[.contentType] = "text/plain"
        let (answer, response) = try await session.upload(for: post, from: Data("field=value".utf8))
        #expect(response.networkProtocolName == "h2")
        #expect(String(decoding: answer, as: UTF8.self) == "length=11 type=text/plain\nfield=value")

        // Larger than the stream's and the connection's first flow-control windows (64 KiB): the upload waits
        // for the server's WINDOW_UPDATEs.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("h2-upload-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        // nginx's random 1 MiB thrice, made off Swift's pool: computing 3 MiB byte by byte in a debug build held
        // one of its two threads for seconds, and other suites' loads ran into their request timeouts meanwhile.
        let root = try Nginx.require().root
        let content = try await offCooperativePool {
            let piece = try Data(contentsOf: URL(fileURLWithPath: root + "/1m.bin"))
            let content = piece + piece + piece
            try content.write(to: file)
            return content
        }
        var put = LoadRequest(url: try h2("/echo-body"))
        put.method = .put
        put.headerFields[.contentType] = "application/octet-stream"
        let (fileAnswer, _) = try await session.upload(for: put, fromFile: file)
        let head = Data("length=\(content.count) type=application/octet-stream\n".utf8)
        #expect(fileAnswer.count == head.count + content.count)
        let difference = try await offCooperativePool { Bytes.difference(fileAnswer, head + content) }
        #expect(difference == nil)
    }

    @Test("A body of unknown length from an async stream goes up as DATA frames (no chunked coding on HTTP/2)",
          .enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/nginx/modules/ngx_http_echo_module.so"),
                   "nginx's echo module (libnginx-mod-http-echo) gives /echo-body"))
    func streamedUpload() async throws {
        var request = LoadRequest(url: try h2("/echo-body"), method: .put)
        request.headerFields[.contentType] = "text/plain"
        request.body = .stream(length: nil) {
            AsyncThrowingStream { continuation in
                for part in ["one ", "two ", "three"] { continuation.yield(Data(part.utf8)) }
                continuation.finish()
            }
        }
        let (data, response) = try await Nginx.session().data(for: request)
        #expect(response.networkProtocolName == "h2")
        // nginx counts the length itself once the stream has ended.
        #expect(String(decoding: data, as: UTF8.self) == "length=13 type=text/plain\none two three")
    }

    @Test("A 32 MiB body streams in whole, byte for byte")
    func largeBody() async throws {
        let root = try Nginx.require().root
        let (data, response) = try await Nginx.session().data(from: h2("/32m.bin"))
        #expect(response.networkProtocolName == "h2")
        // Read and compared off Swift's pool (see `uploads`).
        let difference = try await offCooperativePool { Bytes.difference(data, try Data(contentsOf: URL(fileURLWithPath: root + "/32m.bin"))) }
        #expect(difference == nil)
    }

    @Test("A 1 GiB download over HTTP/2 streams through bytes(from:) with bounded peak memory growth")
    func gigabyteOverHTTP2InBoundedMemory() async throws {
        let session = try Nginx.session()
        let url = try h2("/1g.bin")
        let (growth, count) = try await ResourceProbes.measuringPeakGrowth {
            let (bytes, response) = try await session.bytes(from: url)
            #expect(response.networkProtocolName == "h2")
            var count = 0
            for try await chunk in bytes.chunks { count += chunk.count }
            return count
        }
        #expect(count == 1 << 30)
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak memory grew by \(growth >> 20) MiB")
    }

    @Test("Loads that end close their streams without a reset; one cancelled in the middle of its body resets its stream alone, and the next load shares the connection")
    func cancelledStream() async throws {
        let session = try Nginx.session()
        for _ in 0..<10 { _ = try await session.data(from: h2("/hello.txt")) }
        let connection = try #require(HTTPEngine.shared.pool.http2Connections(session: session.identifier).first)
        // NIOHTTP2 reports a stream's close just after its response's end: a moment for the last one.
        try await Task.sleep(for: .milliseconds(100))
        #expect(connection.resetStreams.load(ordering: .relaxed) == 0, "a stream that had ended was reset (RST_STREAM)")

        let (bytes, response) = try await session.bytes(from: h2("/512m.bin"))
        var chunks = bytes.chunks.makeAsyncIterator()
        let first = try await chunks.next()
        #expect(first?.isEmpty == false)
        bytes.task.cancel()
        // Drained after the cancel: the body stops with an error, well short of its 512 MiB.
        var received = first?.count ?? 0
        do {
            while let chunk = try await chunks.next() { received += chunk.count }
            Issue.record("the cancelled body ended normally after \(received) bytes")
        } catch {
            #expect(received < 512 << 20)
        }
        let (data, after) = try await session.data(from: h2("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(try #require(after.headerFields[Self.connection]) == (try #require(response.headerFields[Self.connection])),
                "the connection outlived the reset stream")
        #expect(await eventually { connection.resetStreams.load(ordering: .relaxed) == 1 }, "the cancelled stream was reset: \(connection.resetStreams.load(ordering: .relaxed))")
    }

    @Test("After the server's GOAWAY (nginx: five requests a connection) loads go on over a new connection")
    func goAway() async throws {
        let session = try Nginx.session()
        let port = try Nginx.require().h2GoAwayPort
        var connections: [String] = []
        for _ in 0..<12 {
            let (data, response) = try await session.data(from: h2("/hello.txt", port: port))
            #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
            connections.append(try #require(response.headerFields[Self.connection]))
        }
        // Five on each connection, in order.
        #expect(Set(connections).count == 3, "\(connections)")
        #expect(connections.prefix(5).allSatisfy { $0 == connections[0] } && connections[5] != connections[4], "\(connections)")
    }

    @Test("16 loads at once against a server that processes five streams a connection: the streams its GOAWAY left out go again, and all succeed")
    func goAwayUnderLoad() async throws {
        let session = try Nginx.session()
        let port = try Nginx.require().h2GoAwayPort
        // All 16 go on the first connection; the server processes five and drops the rest, which go again
        // on the next connection, and so on: the last load is sent four times (the most is five).
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<16 {
                group.addTask { String(decoding: try await session.data(from: h2("/hello.txt", port: port)).0, as: UTF8.self) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 16)
        #expect(bodies.allSatisfy { $0 == "Hello from nginx\n" })
    }

    @Test("POSTs the server's GOAWAY left out are sent again too: it never processed them (RFC 9113 §8.7)")
    func goAwayResendsPosts() async throws {
        let session = try Nginx.session()
        let port = try Nginx.require().h2GoAwayPort
        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<12 {
                group.addTask {
                    var post = LoadRequest(url: try h2("/echo", port: port))
                    post.method = .post
                    let (data, response) = try await session.upload(for: post, from: Data(repeating: 1, count: 100 + index))
                    return (response.status?.code ?? 0, String(decoding: data, as: UTF8.self))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 12)
        #expect(answers.allSatisfy { $0.0 == 200 && $0.1.hasPrefix("method=POST length=1") }, "\(answers)")
        // Each body once, as sent: lengths 100...111.
        #expect(Set(answers.map(\.1)) == Set((100..<112).map { "method=POST length=\($0)\n" }))
    }

    @Test("A burst to an https origin that speaks HTTP/1.1 waits for the first connection only: then each opens its own")
    func burstToHTTP1Origin() async throws {
        let session = try Nginx.session()
        let responses = try await withThrowingTaskGroup(of: LoadResponse.self) { group in
            for _ in 0..<16 { group.addTask { try await session.data(from: Nginx.https("/hello.txt")).1 } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.allSatisfy { $0.networkProtocolName == "http/1.1" && $0.status == .ok })
        let connections = try Set(responses.map { try #require($0.headerFields[Self.connection]) })
        #expect(connections.count > 1, "16 loads went one after another on one HTTP/1.1 connection")
    }

    @Test("A burst to an https origin that cannot be reached fails each load with the cause, none left waiting")
    func burstToRefusingOrigin() async throws {
        let session = try Nginx.session()
        let url = URL(string: "https://localhost:\(LoopbackPorts.closed())/hello.txt")!
        let errors = await withTaskGroup(of: LoadError?.self) { group in
            for _ in 0..<8 { group.addTask { await loadError { _ = try await session.data(from: url) } } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(errors.count == 8)
        #expect(errors.allSatisfy { $0?.code == .cannotConnectToHost && $0?.url == url }, "\(errors)")
        // localhost is two addresses here (::1 and 127.0.0.1): one refused is a refusal.
        #expect(errors.allSatisfy { ($0?.underlying as? POSIXError)?.code == .ECONNREFUSED }, "\(errors.map { $0?.underlying })")
    }

    /// Waits (at most 20 s) until the pool keeps nothing for `session`'s origins; what it keeps then.
    private func drained(_ session: LoaderSession) async throws -> Int {
        let pool = HTTPEngine.shared.pool
        for _ in 0..<400 where pool.originCount(session: session.identifier) > 0 {
            try await Task.sleep(for: .milliseconds(50))
        }
        return pool.originCount(session: session.identifier)
    }

    @Test("An HTTP/2 connection without a stream for the idle timeout closes: its origin leaves the pool, the next load opens another")
    func idleTimeout() async throws {
        let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].idleConnectionTimeout = 0.3 }
        let (_, first) = try await session.data(from: h2("/hello.txt"))
        // Not checked that the pool holds it first: on a slow run (the thread sanitizer's) 0.3 s may be over by then.
        #expect(try await drained(session) == 0, "the idle HTTP/2 connection outlived its timeout")
        let (_, second) = try await session.data(from: h2("/hello.txt"))
        #expect(try #require(second.headerFields[Self.connection]) != (try #require(first.headerFields[Self.connection])))
    }

    @Test("A session that ends closes its HTTP/2 connection: at once when idle, after its last stream when busy")
    func sessionEnd() async throws {
        let idle = try Nginx.session()
        _ = try await idle.data(from: h2("/hello.txt"))
        idle.finishTasksAndInvalidate()
        #expect(try await drained(idle) == 0, "the idle connection outlived its session")

        let busy = try Nginx.session()
        let (bytes, _) = try await busy.bytes(from: h2("/32m.bin"))
        busy.finishTasksAndInvalidate()
        var count = 0
        for try await chunk in bytes.chunks { count += chunk.count }
        #expect(count == 32 << 20, "the load in flight finished")
        #expect(try await drained(busy) == 0, "the connection outlived its session's last load")
    }

    @Test("Through an HTTP proxy's tunnel the connection is still HTTP/2")
    func throughProxy() async throws {
        let proxyPort = try #require(TestServers.proxies).port
        let session = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].httpsProxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxyPort)
        }
        let (data, response) = try await session.data(from: h2("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.networkProtocolName == "h2")
    }
}
