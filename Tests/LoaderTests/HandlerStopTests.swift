import Foundation
import Loader
import Synchronization
import Testing
import TestSupport

/// Counts what a handler reports, and nothing else.
private final class CountingClient: EndWatchingClient {
    let failures = Atomic<Int>(0)
    let finishes = Atomic<Int>(0)

    func handlerDidFinishLoading(_ handler: SchemeHandler) { finishes.add(1, ordering: .relaxed) }
    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) { failures.add(1, ordering: .relaxed) }
}

/// Records how its `load()` ended: 1 when it saw its task cancelled, 2 when it ran out its (long) wait.
private final class WaitingHandler: SchemeHandler, @unchecked Sendable {
    static let outcomes = Mutex<[String: Int]>([:])

    override class var supportedSchemes: Set<String> { ["waiting"] }

    override func load() async throws {
        let name = request.url.absoluteString
        do {
            try await Task.sleep(for: .seconds(60))
            Self.outcomes.withLock { $0[name] = 2 }
        } catch {
            Self.outcomes.withLock { $0[name] = 1 }
            throw error
        }
    }
}

@Suite("A handler's stop, before, during and after its start")
struct HandlerStopTests {
    /// Waits, boundedly, until `condition` holds.
    private func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<400 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        return condition()
    }

    /// Makes a handler for `waiting:NAME`, runs `body` with it, and reports whether it was freed afterwards.
    private func freedAfter(_ name: String, client: CountingClient, _ body: (WaitingHandler) async throws -> Void) async throws -> Bool {
        weak var weakHandler: WaitingHandler?
        do {
            let handler = WaitingHandler(request: LoadRequest(url: URL(string: "waiting:\(name)")!), cachedResponse: nil, client: client)
            weakHandler = handler
            try await body(handler)
        }
        return try await eventually { weakHandler == nil }
    }

    @Test("Stopped before it starts: its load() never runs, nothing is reported, and nothing is kept")
    func stopBeforeStart() async throws {
        let client = CountingClient()
        let freed = try await freedAfter("before", client: client) { handler in
            handler.stopLoading()
            #expect(handler.isStopped)
            handler.startLoading()
        }
        // Released (above), so its task has ended: had load() begun, it would have recorded how it ended.
        #expect(WaitingHandler.outcomes.withLock { $0["waiting:before"] } == nil, "load() ran for a stopped handler")
        // A stopped handler reports nothing more.
        #expect(client.failures.load(ordering: .relaxed) == 0 && client.finishes.load(ordering: .relaxed) == 0)
        #expect(freed, "the handler was released")
    }

    @Test("Stopped while loading, twice: the load is cancelled once, and nothing is kept")
    func stopWhileLoading() async throws {
        let client = CountingClient()
        let freed = try await freedAfter("during", client: client) { handler in
            handler.startLoading()
            #expect(!handler.isStopped)
            handler.stopLoading()
            handler.stopLoading()
            #expect(handler.isStopped)
            let ended = try await eventually { WaitingHandler.outcomes.withLock { $0["waiting:during"] } != nil }
            #expect(ended, "the load ended")
        }
        #expect(WaitingHandler.outcomes.withLock { $0["waiting:during"] } == 1)
        #expect(client.failures.load(ordering: .relaxed) == 0 && client.finishes.load(ordering: .relaxed) == 0)
        #expect(freed)
    }

    @Test("Never stopped: a handler whose load failed reports it, is not stopped, and is released")
    func neverStopped() async throws {
        let client = CountingClient()
        // A request the handler cannot serve: the base class's load() fails at once, and the client hears it.
        weak var weakHandler: SchemeHandler?
        do {
            let handler = SchemeHandler(request: LoadRequest(url: URL(string: "nothing:x")!), cachedResponse: nil, client: client)
            weakHandler = handler
            handler.startLoading()
            #expect(try await eventually { client.failures.load(ordering: .relaxed) == 1 })
            #expect(!handler.isStopped)
        }
        #expect(try await eventually { weakHandler == nil }, "the handler was released")
    }
}
