import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

/// HTTP Strict Transport Security against nginx, whose `/hsts` sends `Strict-Transport-Security: max-age=3600;
/// includeSubDomains` (and `/hsts-off` `max-age=0`) on its HTTP and HTTPS ports alike. A plain `http` request to
/// its HTTPS port gets nginx's 400, so whether a request went as `https` shows in its status.
@Suite("http: HTTP Strict Transport Security (RFC 6797) against nginx")
struct HTTPStrictTransportTests {
    /// `http://localhost:<the HTTPS port><path>`: a 400 in plain HTTP, the file over HTTPS.
    private func plainToTLSPort(_ path: String = "/hello.txt") throws -> URL {
        URL(string: "http://localhost:\(try Nginx.require().httpsPort)\(path)")!
    }

    @Test("After an HTTPS response with the field, an http request to the host goes as https (its port kept); max-age=0 ends it")
    func upgradesKnownHost() async throws {
        let session = try Nginx.session()
        let (_, before) = try await session.data(from: try plainToTLSPort())
        #expect(before.status == .badRequest, "plain HTTP to the TLS port, before any policy")

        let (on, _) = try await session.data(from: Nginx.https("/hsts"))
        #expect(String(decoding: on, as: UTF8.self) == "hsts on\n")
        let (data, response) = try await session.data(from: try plainToTLSPort())
        #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        let httpsPort = try Nginx.require().httpsPort
        #expect(response.url.scheme == "https" && response.url.port == httpsPort, "\(response.url)")
        #expect(try #require(session.configuration.hstsStore).entries.map(\.host) == ["localhost"])

        _ = try await session.data(from: Nginx.https("/hsts-off"))
        let (_, after) = try await session.data(from: try plainToTLSPort())
        #expect(after.status == .badRequest, "max-age=0 ended the policy")
    }

    @Test("The field over plain HTTP sets no policy; a session without a store upgrades nothing")
    func ignoredWhereItMustBe() async throws {
        let nginx = try Nginx.require()
        let session = try Nginx.session()
        let (_, plain) = try await session.data(from: URL(string: "http://localhost:\(nginx.httpPort)/hsts")!)
        #expect(plain.headerFields[HTTPField.Name("Strict-Transport-Security")!] != nil, "nginx sends it over HTTP too")
        #expect(try #require(session.configuration.hstsStore).entries.isEmpty)
        let (_, still) = try await session.data(from: try plainToTLSPort())
        #expect(still.status == .badRequest)

        let off = try Nginx.session { $0.hstsStore = nil }
        _ = try await off.data(from: Nginx.https("/hsts"))
        let (_, unchanged) = try await off.data(from: try plainToTLSPort())
        #expect(unchanged.status == .badRequest, "no store, no upgrade")
    }

    @Test("A ws: socket to a host the store covers opens as wss: (its port kept): the WebSocket server's TLS port takes no plain handshake")
    func upgradesWebSockets() async throws {
        let sockets = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
        let session = try Nginx.session()
        let url = URL(string: "ws://localhost:\(sockets.tlsPort)/echo")!
        let plain = await loadError { try await session.webSocketTask(with: url).send(.string("plain")) }
        #expect(plain != nil, "a plain handshake to the TLS port fails")
        _ = try await session.data(from: Nginx.https("/hsts"))
        let socket = session.webSocketTask(with: url)
        try await socket.send(.string("upgraded"))
        #expect(try await socket.receive() == .string("upgraded"))
        socket.cancel()
    }

    @Test("A wss: handshake's answer with the field sets a policy, as an HTTPS response's does; a ws: one's does not")
    func learnsFromWebSockets() async throws {
        let sockets = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
        // The plain server sends the field too: over ws it must be ignored.
        let plainSession = try Nginx.session()
        let plain = plainSession.webSocketTask(with: URL(string: "ws://localhost:\(sockets.port)/hsts")!)
        try await plain.send(.string("plain"))
        #expect(try await plain.receive() == .string("plain"))
        plain.cancel()
        #expect(try #require(plainSession.configuration.hstsStore).entries.isEmpty)

        let session = try Nginx.session()
        let secure = session.webSocketTask(with: URL(string: "wss://localhost:\(sockets.tlsPort)/hsts")!)
        try await secure.send(.string("secure"))
        #expect(try await secure.receive() == .string("secure"))
        secure.cancel()
        let store = try #require(session.configuration.hstsStore)
        #expect(store.entries.map(\.host) == ["localhost"] && store.requiresHTTPS("localhost"))
        // And it holds for the session's loads: plain HTTP to nginx's TLS port goes as https.
        let (_, response) = try await session.data(from: try plainToTLSPort())
        #expect(response.status == .ok && response.url.scheme == "https", "\(response.url)")
    }

    @Test("Sessions given one store share what it learns, and a redirect to an http URL of the host is upgraded too")
    func sharedStoreAndRedirects() async throws {
        let store = HSTSStore()
        let first = try Nginx.session { $0.hstsStore = store }
        let second = try Nginx.session { $0.hstsStore = store }
        _ = try await first.data(from: Nginx.https("/hsts"))
        let (data, response) = try await second.data(from: try plainToTLSPort())
        #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        // /to-plain-http answers 301 to http://localhost:<the TLS port>/hello.txt: that hop goes as https too.
        let (redirected, final) = try await second.data(from: Nginx.https("/to-plain-http"))
        #expect(final.status == .ok && String(decoding: redirected, as: UTF8.self) == "Hello from nginx\n")
        #expect(final.url.scheme == "https")
        // An http request sent as https, redirected on the same https origin: its Authorization stays with it, the
        // hop judged from where the request went (nginx's Location is https://localhost:<the TLS port>/authorization).
        var request = LoadRequest(url: try plainToTLSPort("/redirect-to-authorization"))
        request.headerFields[.authorization] = "Bearer kept"
        let (authorized, _) = try await second.data(for: request)
        #expect(String(decoding: authorized, as: UTF8.self) == "authorization=Bearer kept\n")
    }

    @Test("Of two Strict-Transport-Security fields the first counts (the fields joined would state no policy)")
    func firstFieldCounts() async throws {
        let session = try Nginx.session()
        let (_, twice) = try await session.data(from: Nginx.https("/hsts-twice"))
        #expect(twice.headerFields[values: HTTPField.Name("Strict-Transport-Security")!].count == 2)
        let (_, response) = try await session.data(from: try plainToTLSPort())
        #expect(response.status == .ok && response.url.scheme == "https")
    }
}
