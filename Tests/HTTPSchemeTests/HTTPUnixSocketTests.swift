import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

@Suite("http(s): over a Unix socket (HTTPClientOptions.unixSocketPath, nginx listening on one)")
struct HTTPUnixSocketTests {
    /// A session whose connections all go to `socket`.
    private func session(to socket: String, configure: (inout HTTPClientOptions) -> Void = { _ in }) throws -> LoaderSession {
        try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].unixSocketPath = socket
            configure(&$0.handlerOptions[HTTPClientOptions.self])
        }
    }

    private static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    @Test("Over the socket: nginx's body, the URL's host and port in Host (a name no resolver knows), one connection for two requests")
    func plain() async throws {
        let session = try session(to: try Nginx.require().unixSocket)
        let (host, hostResponse) = try await session.data(from: URL(string: "http://site.invalid:8080/host")!)
        #expect(hostResponse.status == .ok)
        #expect(Self.text(host) == "host=site.invalid:8080\n")
        let url = URL(string: "http://site.invalid/hello.txt")!
        let (first, firstResponse) = try await session.data(from: url)
        let (_, secondResponse) = try await session.data(from: url)
        #expect(Self.text(first) == "Hello from nginx\n")
        let connection = HTTPField.Name("X-Connection")!
        #expect(firstResponse.headerFields[connection] != nil)
        #expect(firstResponse.headerFields[connection] == secondResponse.headerFields[connection], "the second request took a new connection")
    }

    @Test("HTTPS over the socket checks the certificate against the URL's host: localhost passes, another name fails")
    func tls() async throws {
        let session = try session(to: try Nginx.require().tlsUnixSocket)
        let (data, response) = try await session.data(from: URL(string: "https://localhost/hello.txt")!)
        #expect(response.status == .ok)
        #expect(Self.text(data) == "Hello from nginx\n")
        let wrong = URL(string: "https://wrong.example/hello.txt")!
        let error = await loadError { _ = try await session.data(from: wrong) }
        #expect(error?.code == .serverCertificateWrongHost, "\(String(describing: error))")
        #expect(error?.url == wrong)
    }

    @Test("A proxy set beside the socket is not used: the request goes to the socket without the proxy's credentials")
    func proxyNotUsed() async throws {
        // Nothing listens on port 1: had the proxy been dialled, the load would fail.
        let session = try session(to: try Nginx.require().unixSocket) {
            $0.httpProxy = HTTPClientOptions.Proxy(host: "127.0.0.1", port: 1, user: "user", password: "secret")
        }
        let (data, _) = try await session.data(from: URL(string: "http://localhost/request-line")!)
        #expect(Self.text(data) == "uri=/request-line proxy-authorization=\n")
    }

    @Test("A request may name its own socket: it goes there, and the same URL without it goes by TCP, never on the socket's connection")
    func perRequest() async throws {
        let nginx = try Nginx.require()
        let session = try Nginx.session()
        var request = LoadRequest(url: URL(string: "http://socket.invalid/host")!)
        request.options[HTTPClientOptions.self].unixSocketPath = nginx.unixSocket
        let (data, _) = try await session.data(for: request)
        #expect(Self.text(data) == "host=socket.invalid\n")
        // The same origin both ways: nginx numbers its connections, so a shared one would show the same number.
        let url = try Nginx.http("/hello.txt")
        var bySocket = LoadRequest(url: url)
        bySocket.options[HTTPClientOptions.self].unixSocketPath = nginx.unixSocket
        let (_, socketResponse) = try await session.data(for: bySocket)
        let (tcp, tcpResponse) = try await session.data(from: url)
        #expect(Self.text(tcp) == "Hello from nginx\n")
        let connection = HTTPField.Name("X-Connection")!
        #expect(socketResponse.headerFields[connection] != nil)
        #expect(socketResponse.headerFields[connection] != tcpResponse.headerFields[connection], "the TCP request went on the socket's connection")
    }

    @Test("A WebSocket goes to the socket too (the server's plain listener on one): its handshake and messages")
    func webSocket() async throws {
        let servers = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
        let socket = try session(to: servers.unixSocket).webSocketTask(with: URL(string: "ws://site.invalid/echo")!)
        try await socket.send(.string("through a socket"))
        #expect(try await socket.receive() == .string("through a socket"))
        #expect(socket.response?.status?.code == 101)
        socket.cancel(with: .normalClosure, reason: nil)
    }

    @Test("A missing socket, a path that is no socket, and one too long for a socket's address fail with cannotConnectToHost naming the URL and the path")
    func missing() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("unix-socket-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let notSocket = folder.appendingPathComponent("plain.txt")
        try Data("not a socket\n".utf8).write(to: notSocket)
        let tooLong = folder.appendingPathComponent(String(repeating: "s", count: 200)).path
        for path in [folder.appendingPathComponent("gone.sock").path, notSocket.path, tooLong] {
            let url = URL(string: "http://localhost/hello.txt")!
            let error = await loadError { _ = try await session(to: path).data(from: url) }
            #expect(error?.code == .cannotConnectToHost, "\(path): \(String(describing: error))")
            #expect(error?.url == url)
            #expect(error?.reason?.contains(path) == true, "\(String(describing: error?.reason))")
        }
    }
}
