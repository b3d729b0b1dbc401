import Foundation
@testable import HTTPScheme
import Loader
import TestSupport
import Testing

@Suite("http: a session that ends closes its keep-alive connections (an in-process NIO server of the test's own)")
struct HTTPSessionEndTests {
    private func session() -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        return LoaderSession(configuration: configuration)
    }

    /// Waits (at most 10 s, in steps of 50 ms) until the server has seen `count` connections close.
    private func closed(_ server: ScriptedServer, count: Int) async throws -> Int {
        for _ in 0..<200 where server.closedCount < count {
            try await Task.sleep(for: .milliseconds(50))
        }
        return server.closedCount
    }

    /// Waits (at most 10 s, in steps of 10 ms) until the server has accepted `count` connections: a client's
    /// connect completes in the kernel before the server's event loop has run its accept.
    private func accepted(_ server: ScriptedServer, count: Int) async throws -> Int {
        for _ in 0..<1000 where server.acceptedCount < count {
            try await Task.sleep(for: .milliseconds(10))
        }
        return server.acceptedCount
    }

    @Test("Invalidating a session closes its idle connection at once, not after the 60 s idle timeout")
    func invalidationClosesIdleConnections() async throws {
        let server = try ScriptedServer()
        let session = session()
        for _ in 0..<2 {
            let (body, _) = try await session.data(from: server.url("/ok"))
            #expect(String(decoding: body, as: UTF8.self) == "ok")
        }
        #expect(server.acceptedCount == 1, "the two loads shared one keep-alive connection")
        #expect(server.closedCount == 0)
        session.finishTasksAndInvalidate()
        #expect(try await closed(server, count: 1) == 1)
    }

    @Test("Releasing a session closes its connections; another session's stay open")
    func releaseClosesOnlyItsOwn() async throws {
        let server = try ScriptedServer()
        let kept = session()
        _ = try await kept.data(from: server.url("/ok"))
        do {
            let released = session()
            _ = try await released.data(from: server.url("/ok"))
        }
        #expect(server.acceptedCount == 2, "sessions share no connection")
        #expect(try await closed(server, count: 1) == 1)
        // The kept session's connection is still open and serves its next load.
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.closedCount == 1)
        _ = try await kept.data(from: server.url("/ok"))
        #expect(server.acceptedCount == 2)
    }

    @Test("A connection still leased when its session ends is closed when released, not pooled; other sessions' stay")
    func leasedConnectionClosesOnRelease() async throws {
        let server = try ScriptedServer()
        let pool = HTTPEngine.shared.pool
        let url = server.url("/ok")
        // Session numbers of their own, far from the sessions this process makes.
        let ended = Int.max - Int.random(in: 0..<1_000_000) * 2, other = ended - 1
        func key(_ session: Int) -> ConnectionPool.Key {
            .recent(session: session, scheme: "http", host: "127.0.0.1", port: server.port, options: HTTPClientOptions())
        }
        let lease = try await pool.acquire(key(ended), url: url)
        let otherLease = try await pool.acquire(key(other), url: url)
        #expect(try await accepted(server, count: 2) == 2)
        pool.closeConnections(ofSession: ended)
        #expect(server.closedCount == 0, "a leased connection is not closed under its response")
        pool.release(lease.connection, reusable: true)
        pool.release(otherLease.connection, reusable: true)
        #expect(try await closed(server, count: 1) == 1)
        #expect(pool.originCount(session: ended) == 0, "nothing kept for the ended session")
        #expect(pool.originCount(session: other) == 1, "the other session's connection went idle in the pool")
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.closedCount == 1)
        pool.closeConnections(ofSession: other)
        #expect(try await closed(server, count: 2) == 2)
    }
}
