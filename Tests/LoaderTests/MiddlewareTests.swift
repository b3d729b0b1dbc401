import Foundation
import HTTPTypes
import Loader
import Synchronization
import TestSupport
import Testing

/// Adds a header to every request.
private struct Tagging: LoadMiddleware {
    let value: String
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        var request = request
        let old = request.headerFields[HTTPField.Name("X-Echo")!].map { $0 + "," } ?? ""
        request.headerFields[HTTPField.Name("X-Echo")!] = old + value
        return try await next(request)
    }
}

/// Answers `echo:cached` itself, never reaching a handler.
private struct CacheHit: LoadMiddleware {
    let calls = Calls()
    final class Calls: Sendable { let count = Atomic<Int>(0) }
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        guard request.url.absoluteString == "echo:cached" else { return try await next(request) }
        calls.count.wrappingAdd(1, ordering: .relaxed)
        return LoadResult(response: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: 4), body: ResponseBody(data: Data("hit!".utf8)))
    }
}

/// Retries once with another URL when the first load fails.
private struct Fallback: LoadMiddleware {
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        do {
            return try await next(request)
        } catch let error as LoadError where error.code == .unsupportedURL {
            return try await next(LoadRequest(url: URL(string: "echo:fallback")!))
        }
    }
}

/// Runs the rest of the chain in a child task, against a short deadline; the loser is cancelled.
private struct ChildDeadline: LoadMiddleware {
    struct Expired: Error {}
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await withThrowingTaskGroup(of: LoadResult?.self) { group in
            group.addTask { try await next(request) }
            group.addTask {
                try await Task.sleep(for: .milliseconds(50))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else { throw Expired() }
            return result
        }
    }
}

/// Waits an hour before it passes the request on (as a backoff before a retry), noting when it has begun to wait.
private final class LongBackoff: LoadMiddleware {
    let waiting = Atomic<Bool>(false)
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        waiting.store(true, ordering: .releasing)
        try await Task.sleep(for: .seconds(3600))
        return try await next(request)
    }
}

@Suite("Middleware: rewriting, answering, calling again, transforming")
struct MiddlewareTests {
    @Test("LoadTask.cancel() ends a load of the async API while an app's middleware waits on its own: it fails cancelled, and the caller's task is not cancelled",
          arguments: ["the task's cancel()", "the session's invalidateAndCancel()"])
    func cancelDuringMiddlewareWait(how: String) async throws {
        let backoff = LongBackoff()
        let session = testSession(middleware: [backoff])
        let url = URL(string: "echo:after-backoff")!
        let outcome = Locked<(error: LoadError?, callerCancelled: Bool)?>(nil)
        let load = Task {
            let error = await loadError { _ = try await session.data(from: url) }
            outcome.withLock { $0 = (error, Task.isCancelled) }
        }
        #expect(await eventually { backoff.waiting.load(ordering: .acquiring) })
        if how == "the task's cancel()" {
            let task = try #require(session.allTasks.first)
            task.cancel()
        } else {
            session.invalidateAndCancel()
        }
        let ended = await eventually { outcome.withLock { $0 != nil } }
        // Only if the load waits out the hour (the failure this test looks for): end it, so the run cannot hang.
        if !ended { load.cancel() }
        await load.value
        #expect(ended, "the load still waited in the middleware after \(how)")
        let result = try #require(outcome.withLock { $0 })
        #expect(result.error?.code == .cancelled)
        #expect(result.error?.url == url)
        if ended { #expect(!result.callerCancelled, "the caller's own task was cancelled") }
    }

    @Test("next called from a cancelled task cancels a load whose handler has answered, and stops the handler")
    func nextFromCancelledTask() async throws {
        // hang: sends its head and a first chunk in its first step, then waits until it is stopped; an hour
        // of request timeout, so only the cancellation can end the load.
        let (probeID, probe) = Probes.make()
        let url = URL(string: "hang://\(probeID)/after-response")!
        let session = testSession(middleware: [PreCancelledNext()]) { $0.timeoutIntervalForRequest = 3600 }
        let load = Task { await loadError { _ = try await session.data(from: url) } }
        let ended = await eventually { probe["stopped"] == 1 }
        // Only if the load hangs (the failure this test looks for): end it, so the run cannot hang.
        if !ended { load.cancel() }
        let error = await load.value
        #expect(ended, "the handler was not stopped")
        #expect(error?.code == .cancelled)
        #expect(error?.url == url)
    }

    @Test("A middleware that calls next in a child task and cancels it stops the handler")
    func cancelledChildNext() async throws {
        let (probeID, probe) = Probes.make()
        // An hour of request timeout: only the child's cancellation can end the wait for the response.
        let session = testSession(middleware: [ChildDeadline()]) { $0.timeoutIntervalForRequest = 3600 }
        let load = Task { try await session.data(from: URL(string: "hang://\(probeID)/before-response")!) }
        let outcome = Locked<LoadError??>(nil)
        let watcher = Task {
            let error = await loadError { _ = try await load.value }
            outcome.withLock { $0 = .some(error) }
        }
        let finished = await eventually { outcome.withLock { $0 != nil } }
        // Only if the load hangs (the failure this test looks for): end it, so the run cannot hang.
        if !finished { load.cancel() }
        await watcher.value
        #expect(finished, "the load still waited for the handler after the middleware's child was cancelled")
        #expect(await eventually { probe["stopped"] == 1 })
        #expect(outcome.withLock { $0 ?? nil }?.underlying is ChildDeadline.Expired)
    }

    @Test("Middleware runs outermost first and can rewrite the request")
    func order() async throws {
        let session = testSession(middleware: [Tagging(value: "outer"), Tagging(value: "inner")])
        let (_, response) = try await session.data(from: URL(string: "echo:x")!)
        #expect(response.headerFields[HTTPField.Name("X-Echo")!] == "outer,inner")
    }

    @Test("Middleware can answer without calling the next layer")
    func shortCircuit() async throws {
        let cache = CacheHit()
        let session = testSession(middleware: [cache])
        let (data, _) = try await session.data(from: URL(string: "echo:cached")!)
        #expect(String(decoding: data, as: UTF8.self) == "hit!")
        #expect(cache.calls.count.load(ordering: .relaxed) == 1)
        let (other, _) = try await session.data(from: URL(string: "echo:other")!)
        #expect(String(decoding: other, as: UTF8.self) == "echo:other")
    }

    @Test("Middleware can call the rest of the chain again")
    func callAgain() async throws {
        let session = testSession(middleware: [Fallback()])
        let (data, _) = try await session.data(from: URL(string: "unknown:thing")!)
        #expect(String(decoding: data, as: UTF8.self) == "echo:fallback")
    }

    @Test("Middleware can transform a streamed body")
    func transformBody() async throws {
        let session = testSession(middleware: [BodyMap { Data($0.reversed()) }])
        let (data, response) = try await session.data(from: URL(string: "echo:abc")!)
        #expect(String(decoding: data, as: UTF8.self) == "cba:ohce")
        #expect(response.expectedContentLength == 8)
    }

    @Test("A handler-proposed redirect is followed by the redirect middleware, not the handler")
    func handlerRedirect() async throws {
        final class Spy: LoaderSessionDelegate {
            let task = Locked<LoadTask?>(nil)
            func session(_ session: LoaderSession, didCreateTask task: LoadTask) { self.task.withLock { $0 = task } }
        }
        let spy = Spy()
        let (data, response) = try await testSession(delegate: spy).data(from: URL(string: "hop://a/target")!)
        #expect(String(decoding: data, as: UTF8.self) == "echo:/target")
        #expect(response.url.absoluteString == "echo:/target")
        #expect(spy.task.withLock { $0?.currentRequest.url.absoluteString } == "echo:/target")
    }

    @Test("With redirects turned off the redirect response reaches the caller")
    func redirectsOff() async throws {
        let session = testSession { $0.redirectLimit = 0 }
        let (data, response) = try await session.data(from: URL(string: "hop://a/target")!)
        #expect(data.isEmpty)
        #expect(response.url.absoluteString == "hop://a/target")
    }

    @Test("A redirect loop fails with httpTooManyRedirects naming the URL")
    func redirectLoop() async {
        let error = await loadError { _ = try await testSession().data(from: URL(string: "hop://loop/x")!) }
        #expect(error?.code == .httpTooManyRedirects)
        #expect(error?.url?.absoluteString == "hop://loop/x")
    }

    @Test("A handler's proposed redirect to another origin loses Authorization; one to the same origin keeps it")
    func proposedRedirectDropsCredentials() async throws {
        var request = LoadRequest(url: URL(string: "hop://carry/target")!)
        request.headerFields[.authorization] = "Basic dTpw"
        request.headerFields[HTTPField.Name("X-Echo")!] = "kept"
        let (_, response) = try await testSession().data(for: request)
        #expect(response.url.absoluteString == "echo:/target")
        #expect(response.headerFields[HTTPField.Name("X-Echo")!] == "kept", "the proposed request's other fields go with it")
        #expect(response.headerFields[HTTPField.Name("X-Authorization")!] == nil, "Authorization went to another origin")
    }

    @Test("A delegate can refuse a redirect")
    func delegateRefusesRedirect() async throws {
        final class Refuser: LoadTaskDelegate {
            func loadTask(_ task: LoadTask, willPerformRedirection response: LoadResponse, newRequest request: LoadRequest) async -> LoadRequest? { nil }
        }
        let (_, response) = try await testSession().data(from: URL(string: "hop://a/target")!, delegate: Refuser())
        #expect(response.url.absoluteString == "hop://a/target")
    }
}
