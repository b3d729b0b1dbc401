import Foundation
@testable import HTTPScheme
import HTTPTypes
@testable import Loader
import TestSupport
import Testing

@Suite("http: the pool's queue and idle connections (an in-process NIO server)")
struct HTTPPoolQueueTests {
    let server = ScriptedServer.shared

    private func session(_ options: (inout HTTPClientOptions) -> Void) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        options(&configuration.handlerOptions[HTTPClientOptions.self])
        return LoaderSession(configuration: configuration)
    }

    @Test("Cancelled waiters leave the queue; the others are served in turn on one new connection")
    func queuedRequests() async throws {
        let session = session { $0.maximumConnectionsPerHost = 1 }
        // The only connection is busy with an endless body until that load is cancelled.
        let connection = HTTPField.Name("X-Connection")!
        let (held, heldResponse) = try await session.bytes(from: server.url("/endless"))
        var served = Set<String>()
        let waiters = (0..<6).map { _ in
            Task { try await session.data(from: server.url("/ok")) }
        }
        for index in [1, 4] { waiters[index].cancel() }
        held.task.cancel()
        for (index, waiter) in waiters.enumerated() {
            if index == 1 || index == 4 {
                let error = await loadError { _ = try await waiter.value }
                #expect(error?.code == .cancelled, "waiter \(index) was cancelled")
            } else {
                let (data, response) = try await waiter.value
                #expect(String(decoding: data, as: UTF8.self) == "ok")
                #expect(response.status == .ok)
                served.insert(response.headerFields[connection] ?? "none")
            }
        }
        // The four served waiters shared one connection, opened when the endless one was closed.
        #expect(served.count == 1)
        #expect(!served.contains(heldResponse.headerFields[connection] ?? "none"))
        // The held stream ends cancelled when read; then nothing of this session is left running.
        #expect(await loadError { for try await _ in held.chunks {} }?.code == .cancelled)
        #expect(session.allTasks.isEmpty)
    }

    @Test("An idle connection is closed after the idle timeout; reuse within it keeps the connection")
    func idleTimeout() async throws {
        // A timeout long enough for a loaded machine to make the second request within it: under the thread
        // sanitizer, with the other suites running alongside, 1 s once was not.
        let session = session { $0.idleConnectionTimeout = 5 }
        let connection = HTTPField.Name("X-Connection")!
        let (_, first) = try await session.data(from: server.url("/ok"))
        let (_, second) = try await session.data(from: server.url("/ok"))
        #expect(first.headerFields[connection] == second.headerFields[connection], "reused within the timeout")
        // The timer armed by the first response finds the connection reused and waits out the rest; then the
        // pool closes it, its origin leaves the pool's table, and the next request opens another connection.
        // A bounded wait (20 s) rather than a fixed sleep.
        let pool = HTTPEngine.shared.pool
        for _ in 0..<400 where pool.originCount(session: session.identifier) > 0 {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(pool.originCount(session: session.identifier) == 0, "the idle connection outlived its timeout")
        let (_, third) = try await session.data(from: server.url("/ok"))
        #expect(third.headerFields[connection] != second.headerFields[connection], "the idle connection outlived its timeout")
    }

    @Test("An origin whose connections have all closed leaves the pool's table: many origins do not pile up")
    func originsPruned() async throws {
        let session = session { $0.idleConnectionTimeout = 0.2 }
        let pool = HTTPEngine.shared.pool
        func originsLeft() async throws -> Int {
            // Bounded wait for the pool to close what it should.
            for _ in 0..<200 where pool.originCount(session: session.identifier) > 0 {
                try await Task.sleep(for: .milliseconds(50))
            }
            return pool.originCount(session: session.identifier)
        }
        // Two endless bodies hold a connection each, to the server by address and by name.
        let held = [try await session.bytes(from: server.url("/endless")), try await session.bytes(from: server.url("/endless", host: "localhost"))]
        #expect(pool.originCount(session: session.identifier) == 2)
        // Cancelled, they close their connections.
        for (stream, _) in held { stream.task.cancel() }
        #expect(try await originsLeft() == 0, "origins still in the pool's table after their connections closed")
        // An idle connection leaves when the idle timer closes it.
        let (data, _) = try await session.data(from: server.url("/ok"))
        #expect(String(decoding: data, as: UTF8.self) == "ok")
        #expect(try await originsLeft() == 0, "an origin still in the pool's table after its idle connection closed")
    }

    @Test("A recent key is reused for equal values, any difference makes another, and the oldest of five goes")
    func recentKeys() {
        // An instance of its own: the process-wide one is shared with every other suite running meanwhile.
        var recent = ConnectionPool.Key.RecentKeys()
        func key(port: Int = 8080, session: Int = 7, scheme: String = "http", host: String = "example.test",
                 _ options: (inout HTTPClientOptions) -> Void = { _ in }) -> ConnectionPool.Key {
            var settings = HTTPClientOptions()
            options(&settings)
            return recent.key(session: session, scheme: scheme, host: host, port: port, options: settings)
        }
        let first = key()
        #expect(key() === first, "equal values, the same key")
        let others = [key(scheme: "https"), key(port: 8081), key(session: 8), key { $0.maximumConnectionsPerHost = 2 }]
        for (index, other) in others.enumerated() {
            #expect(other != first, "difference \(index) kept apart")
        }
        // Five keys made: `first` was the oldest and is gone; the four after it are kept.
        #expect(recent.keys.count == ConnectionPool.Key.RecentKeys.capacity)
        for (index, other) in others.enumerated() {
            #expect(key(port: other.port, session: other.session, scheme: other.scheme, host: other.host,
                        { $0 = other.options }) === other, "key \(index) still kept")
        }
        let again = key()
        #expect(again !== first, "the oldest was let go")
        #expect(again == first && again.hashValue == first.hashValue, "an equal key made again finds its connections")
    }

    @Test("The pool key's host is lowercased, a percent-encoded capital beyond ASCII too")
    func keyHostLowercased() throws {
        func host(_ url: String) throws -> String {
            var request = LoadRequest(url: URL(string: url)!)
            request.sessionIdentifier = 7
            return try HTTPRequestPlan(request).key.host
        }
        #expect(try host("http://Example.TEST:8080/a") == "example.test")
        #expect(try host("http://example.test/") == "example.test")
        #expect(try host("http://%C3%89XAMPLE.test/") == "éxample.test")
        // The only capital beyond ASCII: lowercased all the same.
        #expect(try host("http://%C3%89xample.test/") == "éxample.test")
    }
}
