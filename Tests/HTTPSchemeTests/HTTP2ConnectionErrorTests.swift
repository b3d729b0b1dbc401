import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// A server that breaks HTTP/2 on the connection once it is under way (a malformed frame): NIOHTTP2 answers with a
/// GOAWAY and reports the error as it reports one stream's; the connection must close then (RFC 9113 §5.4.1), failing
/// every load on it at once with the server's fault, not leaving them to their timeouts.
@Suite("http: an HTTP/2 connection error after SETTINGS (a scripted server)")
struct HTTP2ConnectionErrorTests {
    private let server: ScriptedHTTP2Server

    init() throws {
        server = try ScriptedHTTP2Server()
    }

    private func url(_ path: String) -> URL { server.url(path) }

    @Test("A malformed PING fails the load that was waiting and a body under way with badServerResponse naming the breach; the next load opens a new connection")
    func malformedFrameEndsConnection() async throws {
        let session = ScriptedHTTP2Server.session()
        // A minute of silence ends a load left waiting: a timeout then, not the server's fault, fails the test. (Twenty
        // seconds were too few where every suite starts at once on two cores: the first loads waited that long.)
        let streaming = server.request("/stream-at-once", timeout: 60)
        let (bytes, head) = try await session.bytes(for: streaming)
        #expect(head.status?.code == 200)

        let broken = server.request("/connection-error", timeout: 60)
        let error = await loadError { _ = try await session.data(for: broken) }
        #expect(error?.code == .badServerResponse, "\(String(describing: error))")
        #expect(error?.url == broken.url)
        #expect(error?.reason?.contains("broke the HTTP/2 protocol") == true, "\(String(describing: error?.reason))")

        // The body under way on the same connection ends too. It never ends by itself (64 bytes a millisecond): a
        // bound of 4 MiB (a minute of it) stands for "never".
        var received = 0
        let bodyError = await loadError {
            for try await chunk in bytes.chunks {
                received += chunk.count
                if received > 4 << 20 { return }
            }
        }
        #expect(bodyError?.code == .badServerResponse, "\(String(describing: bodyError)) after \(received) bytes")

        let (_, after) = try await session.data(from: url("/after"))
        #expect(after.status?.code == 404)
        #expect(server.requests(for: "/connection-error") == 1)
    }

    @Test("A response head past the 80 KiB announced (HEADERS and CONTINUATION frames) fails its load with badServerResponse at once, not after the request timeout; the session serves on")
    func hugeHead() async throws {
        let session = ScriptedHTTP2Server.session()
        let request = server.request("/huge-head", timeout: 60)
        // On a new connection (its SETTINGS perhaps not yet acknowledged: NIOHTTP2's 16 KiB then), and on one that has
        // served a load (the 80 KiB announced in force).
        for warm in [false, true] {
            if warm {
                let (_, first) = try await session.data(from: url("/before"))
                #expect(first.status?.code == 404)
            }
            let error = await loadError { _ = try await session.data(for: request) }
            #expect(error?.code == .badServerResponse, "\(warm): \(String(describing: error))")
            #expect(error?.reason?.contains("broke the HTTP/2 protocol") == true, "\(String(describing: error?.reason))")
            #expect(error?.url == request.url)
        }
        let (_, after) = try await session.data(from: url("/after"))
        #expect(after.status?.code == 404)
    }

    @Test("A response that breaks HTTP/2 on its stream (DATA short of its Content-Length, a field name in capitals) fails its load: no silent truncation, no wait for the timeout; the session serves on", arguments: ["/length-mismatch", "/bad-field"])
    func malformedStream(path: String) async throws {
        let session = ScriptedHTTP2Server.session()
        let request = server.request(path, timeout: 60)
        let error = await loadError { _ = try await session.data(for: request) }
        // NIOHTTP2 resets the stream (PROTOCOL_ERROR) and closes it: the load says so, as curl does ("not closed cleanly").
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.reason?.contains("PROTOCOL_ERROR") == true, "\(String(describing: error?.reason))")
        let (_, after) = try await session.data(from: url("/after"))
        #expect(after.status?.code == 404)
    }
}
