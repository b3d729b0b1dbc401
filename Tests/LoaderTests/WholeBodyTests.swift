import Foundation
@testable import Loader
import Synchronization
import Testing

/// Reports a whole load in its first step, or a moment later from a task of its own, as the URL's path says:
/// `/one` head, body and end in one event; `/two` the body in two chunks; `/fail` a chunk, then a failure;
/// `/later-one` and `/later-two` the same as the first two, after the reader has started waiting.
private final class BurstHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["burst"] }

    /// Stops by the URL's host, so that a test counts its own loads' only (others' stops may come late).
    static let stops = Locked<[String: Int]>([:])
    static let first = Data("first chunk;".utf8)
    static let second = Data("second chunk".utf8)

    override func startLoading() {
        let path = request.url.path
        guard path.hasPrefix("/later-") else { return report(path) }
        Task { [self] in
            try? await Task.sleep(for: .milliseconds(20))
            report("/" + path.dropFirst("/later-".count))
        }
    }

    private func report(_ path: String) {
        let response = LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: nil)
        switch path {
        case "/one":
            client.handler(self, didReceive: response, body: Self.first, finished: true)
        case "/two":
            client.handler(self, didReceive: response)
            client.handler(self, didLoad: Self.first)
            client.handler(self, didLoad: Self.second)
            client.handlerDidFinishLoading(self)
        default:
            client.handler(self, didReceive: response)
            client.handler(self, didLoad: Self.first)
            client.handler(self, didFailWith: LoadError(.networkConnectionLost, url: request.url, reason: "cut by the test"))
        }
    }

    override func stopLoading() {
        Self.stops.withLock { $0[request.url.host ?? "", default: 0] += 1 }
        super.stopLoading()
    }
}

/// Notes how each result's body is held: `data` (handed over whole) or `driver` (read through the load's driver).
private struct BodyKindProbe: LoadMiddleware {
    let kinds = Locked<[String]>([])

    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        let result = try await next(request)
        let kind: String
        switch result.body.source {
        case .empty, .data: kind = "data"
        case .driver: kind = "driver"
        case .sequence: kind = "sequence"
        }
        kinds.withLock { $0.append(kind) }
        return result
    }
}

/// Cancels its task as soon as the response head arrives, as a delegate rejecting a response does, and
/// records any data event that still comes.
private final class RejectingDelegate: LoadTaskDelegate {
    let dataEvents = Atomic<Int>(0)
    func loadTask(_ task: LoadTask, didReceive response: LoadResponse) { task.cancel() }
    func loadTask(_ task: LoadTask, didReceive data: Data) { dataEvents.add(1, ordering: .relaxed) }
    func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?) {
        dataEvents.add(1, ordering: .relaxed)
    }
}

/// A load whose handler has finished before its body is read hands the body over whole, without the driver;
/// what the reader gets must not change with it.
@Suite("A finished load's body", .serialized)
struct WholeBodyTests {
    private func session(middleware: [any LoadMiddleware] = []) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [BurstHandler.self]
        configuration.middleware = middleware
        return LoaderSession(configuration: configuration)
    }

    /// Waits (at most two seconds) for the stops of the handlers that loaded from `host` to reach `count`: a
    /// handler is stopped just after its reader is resumed, so the reader may get there first.
    private func stops(reach count: Int, host: String) async throws -> Bool {
        func stops() -> Int { BurstHandler.stops.withLock { $0[host] ?? 0 } }
        for _ in 0..<200 where stops() < count {
            try await Task.sleep(for: .milliseconds(10))
        }
        return stops() == count
    }

    @Test("The event state hands the body over whole only once the load has finished with one chunk or none")
    func stateMachine() {
        let url = URL(string: "burst://x/one")!
        let response = LoadResponse(url: url, mimeType: nil, expectedContentLength: nil)

        var running = HandlerEventState(url: url, highWatermark: 1 << 20)
        _ = running.receiveResponse(response, redirect: nil)
        _ = running.receiveData(BurstHandler.first)
        #expect(running.takeWholeBody() == nil, "more may come: the body stays with the driver")

        var one = running
        _ = one.receiveFinish()
        #expect(one.takeWholeBody() == BurstHandler.first)
        #expect(one.bufferedBytes == 0)

        var empty = HandlerEventState(url: url, highWatermark: 1 << 20)
        _ = empty.receiveResponse(response, redirect: nil)
        _ = empty.receiveFinish()
        #expect(empty.takeWholeBody() == Data())

        var two = running
        _ = two.receiveData(BurstHandler.second)
        _ = two.receiveFinish()
        #expect(two.takeWholeBody() == nil, "two chunks would have to be joined into a copy")
        #expect(two.bufferedBytes == BurstHandler.first.count + BurstHandler.second.count)

        var failed = running
        _ = failed.receiveFailure(LoadError(.networkConnectionLost, url: url))
        #expect(failed.takeWholeBody() == nil, "the reader must see the chunk, then the error")

        var cancelled = running
        _ = cancelled.receiveFinish()
        _ = cancelled.cancel(with: LoadError(.cancelled, url: url))
        #expect(cancelled.takeWholeBody() == nil, "a cancel that drops unread bytes is not the body's end")
        var effects = HandlerEventState.Effects()
        guard case .failure(let error) = cancelled.poll(&effects) else {
            Issue.record("the reader of a finished body cancelled before its end must get the cancellation")
            return
        }
        #expect(error.code == .cancelled)

        var read = empty
        _ = read.cancel(with: LoadError(.cancelled, url: url))
        #expect(read.takeWholeBody() == Data(), "nothing was left unread: the body's end stands")
    }

    @Test("A load whose own task is cancelled after its handler finished fails with cancelled, never an empty success",
          arguments: ["one", "two"])
    func cancelledAfterFinish(path: String) async throws {
        let session = session(middleware: [PreCancelledNext()])
        let url = URL(string: "burst://x/\(path)")!
        let error = await #expect(throws: LoadError.self) { _ = try await session.data(from: url) }
        #expect(error?.code == .cancelled)
        #expect(error?.url == url)
    }

    @Test("Bodies reported before or after the reader waits arrive whole and in order, and each handler is stopped once",
          arguments: ["one", "two", "later-one", "later-two"])
    func bodies(path: String) async throws {
        let session = session()
        let host = "h\(UInt64.random(in: 0..<UInt64.max))"
        let expected = path.hasSuffix("one") ? BurstHandler.first : BurstHandler.first + BurstHandler.second

        let (data, response) = try await session.data(from: URL(string: "burst://\(host)/\(path)")!)
        #expect(data == expected)
        #expect(response.mimeType == "text/plain")

        var streamed = Data()
        let (bytes, _) = try await session.bytes(from: URL(string: "burst://\(host)/\(path)")!)
        for try await chunk in bytes.chunks { streamed.append(chunk) }
        #expect(streamed == expected)
        #expect(bytes.task.state == .completed)
        #expect(bytes.task.error == nil)

        #expect(try await stops(reach: 2, host: host))
        #expect(session.allTasks.isEmpty)
    }

    @Test("A load that has ended with one chunk or none hands its body over as data; two chunks are read through the driver")
    func bodyKinds() async throws {
        let probe = BodyKindProbe()
        let session = session(middleware: [probe])
        for path in ["one", "later-one", "two", "later-two"] {
            _ = try await session.data(from: URL(string: "burst://x/\(path)")!)
        }
        #expect(probe.kinds.withLock { $0 } == ["data", "data", "driver", "driver"])
    }

    @Test("A task cancelled when its response arrives reports no data and counts no bytes, whole body or not",
          arguments: ["one", "two"])
    func cancelledAtResponse(path: String) async throws {
        let session = session()
        let url = URL(string: "burst://x/\(path)")!

        let delegate = RejectingDelegate()
        let error = await #expect(throws: LoadError.self) { _ = try await session.data(from: url, delegate: delegate) }
        #expect(error?.code == .cancelled)

        let streaming = RejectingDelegate()
        let (bytes, _) = try await session.bytes(from: url, delegate: streaming)
        var received = Data()
        let streamError = await #expect(throws: LoadError.self) {
            for try await chunk in bytes.chunks { received.append(chunk) }
        }
        #expect(streamError?.code == .cancelled)
        #expect(received.isEmpty)
        #expect(bytes.task.progress.countOfBytesReceived == 0)

        let toFile = RejectingDelegate()
        let fileError = await #expect(throws: LoadError.self) { _ = try await session.download(from: url, delegate: toFile) }
        #expect(fileError?.code == .cancelled)

        #expect(delegate.dataEvents.load(ordering: .relaxed) == 0)
        #expect(streaming.dataEvents.load(ordering: .relaxed) == 0)
        #expect(toFile.dataEvents.load(ordering: .relaxed) == 0)
    }

    @Test("A chunk followed by a failure: the reader gets the chunk, then the handler's error, not a short body",
          arguments: ["fail", "later-fail"])
    func failureAfterChunk(path: String) async throws {
        let session = session()
        let url = URL(string: "burst://x/\(path)")!
        let error = await #expect(throws: LoadError.self) { _ = try await session.data(from: url) }
        #expect(error?.code == .networkConnectionLost)
        #expect(error?.url == url)

        let (bytes, _) = try await session.bytes(from: url)
        var received = Data()
        var failure: LoadError?
        do {
            for try await chunk in bytes.chunks { received.append(chunk) }
        } catch let error as LoadError {
            failure = error
        }
        #expect(received == BurstHandler.first)
        #expect(failure?.code == .networkConnectionLost)
        #expect(bytes.task.error?.code == .networkConnectionLost)
    }

    @Test("A finished body dropped unread completes its task as cancelled and leaves no task behind")
    func droppedUnread() async throws {
        let session = session()
        let task: LoadTask
        do {
            let (bytes, _) = try await session.bytes(from: URL(string: "burst://x/one")!)
            task = bytes.task
        }
        #expect(task.state == .completed)
        #expect(task.error?.code == .cancelled)
        #expect(session.allTasks.isEmpty)
    }
}
