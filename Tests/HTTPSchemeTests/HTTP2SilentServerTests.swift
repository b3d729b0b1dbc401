import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// An HTTP/2 server that goes silent with its socket still open (a scripted server that stops reading): a load given
/// up there leads to a PING, and a connection whose server does not answer it is closed, so later loads get a new one.
@Suite("http: an HTTP/2 server gone silent (a scripted server)")
struct HTTP2SilentServerTests {
    private let server: ScriptedHTTP2Server

    init() throws {
        server = try ScriptedHTTP2Server()
    }

    private func url(_ path: String) -> URL { server.url(path) }
    private func request(_ path: String, timeout seconds: TimeInterval) -> LoadRequest { server.request(path, timeout: seconds) }

    /// A session speaking HTTP/2 to the scripted server, its connection opened by a load served.
    private func servedSession() async throws -> LoaderSession {
        let session = ScriptedHTTP2Server.session()
        let (_, first) = try await session.data(from: url("/status/200"))
        #expect(first.status?.code == 200)
        return session
    }

    @Test("After a load times out on a connection whose server went silent, that connection is closed once its PING goes unanswered: a later load is served on a new one")
    func silentConnectionClosed() async throws {
        let session = try await servedSession()
        // The server stops reading that connection: the load waits out its timeout.
        let silent = await loadError { _ = try await session.data(for: request("/go-silent", timeout: 1)) }
        #expect(silent?.code == .timedOut, "\(String(describing: silent))")
        // Later loads: on the silent connection each would time out as well, for as long as the kernel keeps it (many
        // minutes); once the unanswered PING has closed it (5 s), one is served on a new connection.
        var served = false
        var tries = 0
        while !served, tries < 15 {
            tries += 1
            served = (try? await session.data(for: request("/status/200", timeout: 2)).1.status?.code) == 200
            if !served { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(served, "no load served after \(tries) tries")
        #expect(server.requests(for: "/status/200") >= 2)
        // Not checked: which connection served it. On a loaded machine the server may read the /go-silent request in one
        // batch with the PING and a later request behind it, answering both before it falls silent; that connection
        // then rightly stays.
    }

    @Test("A load still waiting on a connection closed for its server's silence fails saying so: the client closed it after an unanswered PING, not the server")
    func waitingLoadToldWhy() async throws {
        let session = try await servedSession()
        // A POST (never sent again by itself) that the server takes and leaves unanswered, on the same connection.
        var post = request("/no-answer", timeout: 30)
        post.method = .post
        let waiting = Task { await loadError { _ = try await session.data(for: post) } }
        #expect(await eventually(within: 10) { server.requests(for: "/no-answer") >= 1 }, "the POST never reached the server")
        // 2 s, so that the server has read the request before the PING its timeout sends comes (1 s was too short once,
        // with the whole suite running: the POST then waited out its 30 s).
        let silent = await loadError { _ = try await session.data(for: request("/go-silent", timeout: 2)) }
        #expect(silent?.code == .timedOut, "\(String(describing: silent))")
        // Its PING unanswered for 5 s, the connection closes, well before the POST's own 30 s.
        let error = await waiting.value
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.reason?.contains("not even an answer to a PING") == true, "\(String(describing: error?.reason))")
        #expect(error?.url == url("/no-answer"))
    }

    @Test("A load given up on a server that is still there (it answers the PING) leaves the connection open: later loads go on it")
    func answeringConnectionKept() async throws {
        let session = try await servedSession()
        let unanswered = await loadError { _ = try await session.data(for: request("/no-answer", timeout: 1)) }
        #expect(unanswered?.code == .timedOut, "\(String(describing: unanswered))")
        // Past the PING's patience: the connection is still the one.
        try await Task.sleep(for: .seconds(6))
        let (_, later) = try await session.data(from: url("/status/200"))
        #expect(later.status?.code == 200)
        #expect(server.connections == 1)
    }
}
