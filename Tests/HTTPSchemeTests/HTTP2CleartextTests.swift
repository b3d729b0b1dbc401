import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

/// Cleartext HTTP/2 with prior knowledge (`http2PriorKnowledge`) against nginx's `listen … http2` port without TLS.
@Suite("http: HTTP/2 with prior knowledge (h2c) against nginx")
struct HTTP2CleartextTests {
    private static let connection = HTTPField.Name("X-Connection")!

    private func h2c(_ path: String) throws -> URL {
        URL(string: "http://127.0.0.1:\(try Nginx.require().h2cPort)\(path)")!
    }

    private func priorKnowledgeSession() throws -> LoaderSession {
        try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].http2PriorKnowledge = true }
    }

    @Test("16 loads at once, GETs and POSTs, go over one HTTP/2 connection, each with its own answer")
    func multiplexed() async throws {
        let session = try priorKnowledgeSession()
        let results = try await withThrowingTaskGroup(of: (Int, Data, LoadResponse).self) { group in
            for index in 0..<16 {
                group.addTask {
                    if index % 2 == 0 {
                        let (data, response) = try await session.data(from: h2c("/hello.txt"))
                        return (index, data, response)
                    }
                    let body = Data(String(repeating: "x", count: index).utf8)
                    let (data, response) = try await session.upload(for: LoadRequest(url: h2c("/echo"), method: .post), from: body)
                    return (index, data, response)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 16)
        for (index, data, response) in results {
            #expect(response.networkProtocolName == "h2")
            #expect(response.status == .ok)
            let expected = index % 2 == 0 ? "Hello from nginx\n" : "method=POST length=\(index) body="
            #expect(String(decoding: data, as: UTF8.self) == expected, "\(index)")
        }
        let connections = Set(results.compactMap { $0.2.headerFields[Self.connection] })
        #expect(connections.count == 1, "\(connections)")
    }

    @Test("Set on the request alone, it holds for that request; without it an http request is HTTP/1.1")
    func perRequest() async throws {
        let session = try Nginx.session()
        var request = LoadRequest(url: try h2c("/hello.txt"))
        request.options[HTTPClientOptions.self].http2PriorKnowledge = true
        let (data, response) = try await session.data(for: request)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.networkProtocolName == "h2")
        let (_, plain) = try await session.data(from: Nginx.http("/hello.txt"))
        #expect(plain.networkProtocolName == "http/1.1")
    }

    @Test("A server that answers in HTTP/1.1 fails the load with badServerResponse naming its status line; allowsHTTP2 = false speaks HTTP/1.1")
    func serverWithoutHTTP2() async throws {
        let url = try Nginx.http("/hello.txt")
        let error = await loadError { _ = try await priorKnowledgeSession().data(from: url) }
        #expect(error?.code == .badServerResponse, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(error?.reason?.contains("HTTP/1.1 400") == true, "\(String(describing: error?.reason))")
        #expect(error?.underlying is any HTTP2ProtocolError)
        let session = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].http2PriorKnowledge = true
            $0.handlerOptions[HTTPClientOptions.self].allowsHTTP2 = false
        }
        let (data, response) = try await session.data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.networkProtocolName == "http/1.1")
    }

    @Test("A server that breaks HTTP/2 (a CONTINUATION frame for its first) fails the load with badServerResponse saying so, without trying again")
    func protocolViolation() async throws {
        // A frame header (18 bytes, type 9: CONTINUATION, stream 0) and its payload, where SETTINGS must come first.
        let server = try RawReplyServer(reply: [0, 0, 18, 9, 0, 0, 0, 0, 0] + Array(repeating: UInt8(ascii: "z"), count: 18))
        let url = URL(string: "http://127.0.0.1:\(server.port)/x")!
        let error = await loadError { _ = try await priorKnowledgeSession().data(from: url) }
        #expect(error?.code == .badServerResponse, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(error?.reason?.contains("broke the HTTP/2 protocol") == true, "\(String(describing: error?.reason))")
        #expect(error?.underlying is any HTTP2ProtocolError)
        #expect(server.acceptedCount == 1)
    }

    @Test("Through an HTTP proxy that forwards http requests it speaks HTTP/1.1 (to the proxy); through a SOCKS5 tunnel, HTTP/2 to the server")
    func throughProxies() async throws {
        let proxies = try #require(TestServers.proxies, "tinyproxy and dante could not be started by scripts/test-servers")
        let forwarding = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].http2PriorKnowledge = true
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: proxies.port)
        }
        let (forwarded, viaProxy) = try await forwarding.data(from: Nginx.http("/hello.txt"))
        #expect(String(decoding: forwarded, as: UTF8.self) == "Hello from nginx\n")
        #expect(viaProxy.networkProtocolName == "http/1.1")
        #expect(viaProxy.headerFields[HTTPField.Name("Via")!]?.contains("tinyproxy") == true)
        let tunnelled = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].http2PriorKnowledge = true
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = HTTPClientOptions.Proxy(.socks5, host: "127.0.0.1", port: proxies.socksPort)
        }
        let (data, response) = try await tunnelled.data(from: h2c("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        #expect(response.networkProtocolName == "h2")
    }

    @Test("Over a Unix socket too: the URL's host in :authority, HTTP/2 from the first byte")
    func overUnixSocket() async throws {
        let socket = try Nginx.require().h2cUnixSocket
        let session = try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].http2PriorKnowledge = true
            $0.handlerOptions[HTTPClientOptions.self].unixSocketPath = socket
        }
        let (data, response) = try await session.data(from: URL(string: "http://h2c.example/host")!)
        #expect(String(decoding: data, as: UTF8.self) == "host=h2c.example\n")
        #expect(response.networkProtocolName == "h2")
    }
}
