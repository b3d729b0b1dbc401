import Foundation
import HTTPTypes
import Loader
import Synchronization
import TestSupport
import Testing

@Suite("Session: the async API")
struct SessionTests {
    @Test("data(from:) returns the handler's body and response")
    func dataFromURL() async throws {
        let url = URL(string: "echo:hello")!
        let (data, response) = try await testSession().data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "echo:hello")
        #expect(response.mimeType == "text/plain")
        #expect(response.expectedContentLength == 10)
        #expect(response.url == url)
    }

    @Test("A URL whose scheme nobody serves fails with unsupportedURL naming the URL")
    func unsupportedScheme() async {
        let url = URL(string: "nosuchscheme://x/y")!
        let error = await loadError { _ = try await testSession().data(from: url) }
        #expect(error?.code == .unsupportedURL)
        #expect(error?.url == url)
        #expect(error?.description.contains("nosuchscheme://x/y") == true)
    }

    @Test("returnCacheDataDontLoad fails with resourceUnavailable unless a layer answers from a cache; the handler never starts")
    func cacheOnlyPolicy() async throws {
        let (probeID, probe) = Probes.make()
        let url = URL(string: "stream://\(probeID)/1000")!
        let cacheOnly = LoadRequest(url: url, cachePolicy: .returnCacheDataDontLoad)
        let error = await loadError { _ = try await testSession().data(for: cacheOnly) }
        #expect(error?.code == .resourceUnavailable)
        #expect(error?.url == url)
        #expect(error?.description.contains("returnCacheDataDontLoad") == true)
        #expect(probe["produced"] == 0, "the handler ran for a request that may not load")

        // A layer of the app's that keeps a cache answers it.
        let (data, _) = try await testSession(middleware: [OneEntryCache(url: url, body: Data("cached".utf8))]).data(for: cacheOnly)
        #expect(String(decoding: data, as: UTF8.self) == "cached")
        #expect(probe["produced"] == 0)
        // Any other policy loads.
        let (loaded, _) = try await testSession().data(for: LoadRequest(url: url, cachePolicy: .returnCacheDataElseLoad))
        #expect(loaded.count == 1000)
        #expect(probe["produced"] == 1000)
    }

    @Test("A URL without a scheme fails with badURL")
    func noScheme() async {
        let error = await loadError { _ = try await testSession().data(from: URL(string: "relative/path")!) }
        #expect(error?.code == .badURL)
    }

    @Test("bytes(from:).lines splits on LF, CRLF and CR, keeping a last line without an end")
    func lines() async throws {
        let session = testSession()
        let url = URL(string: "echo:a%0Ab%0D%0Ac%0Dd")!
        // echo: answers with the URL text itself, so the separators arrive percent-encoded: decode them in
        // a middleware that rewrites the body, proving bodies can be transformed too.
        let decoding = BodyMap { Data(String(decoding: $0, as: UTF8.self).removingPercentEncoding!.utf8) }
        let lines = try await testSession(middleware: [decoding]).bytes(from: url).0.lines
        var seen: [String] = []
        for try await line in lines { seen.append(line) }
        #expect(seen == ["echo:a", "b", "c", "d"])
        _ = session
    }

    @Test("bytes(from:) completes its task at the end of the stream and counts the bytes")
    func bytesCompletesTask() async throws {
        let (probeID, _) = Probes.make()
        let (bytes, response) = try await testSession().bytes(from: URL(string: "stream://\(probeID)/300000")!)
        #expect(response.expectedContentLength == 300_000)
        var count = 0
        var mismatches = 0
        for try await byte in bytes {
            if byte != UInt8(truncatingIfNeeded: (count % 65536) &* 31 &+ 7) { mismatches += 1 }
            count += 1
        }
        #expect(count == 300_000)
        #expect(mismatches == 0)
        #expect(bytes.task.state == .completed)
        #expect(bytes.task.progress.countOfBytesReceived == 300_000)
    }

    @Test("download(from:) writes the body to a file the caller owns")
    func download() async throws {
        let (probeID, _) = Probes.make()
        let delegate = RecordingDelegate()
        let (file, response) = try await testSession().download(from: URL(string: "stream://\(probeID)/1000000")!, delegate: delegate)
        defer { try? FileManager.default.removeItem(at: file) }
        let written = try Data(contentsOf: file)
        #expect(written.count == 1_000_000)
        #expect(written.prefix(65536) == StreamHandler.pattern(0, 65536))
        #expect(response.expectedContentLength == 1_000_000)
        #expect(delegate.events.withLock { $0.last } == "completed")
        #expect(delegate.events.withLock { $0.contains("wrote:1000000") })
    }

    @Test("A failed download removes its partial file")
    func failedDownloadLeavesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dl-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (probeID, _) = Probes.make()
        let session = testSession { $0.temporaryDirectory = directory; $0.timeoutIntervalForRequest = 0.3 }
        let error = await loadError { _ = try await session.download(from: URL(string: "hang://\(probeID)/x")!) }
        #expect(error?.code == .timedOut)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("Invalidating the shared session does nothing, as with URLSession: code handed it cannot end it for the process")
    func sharedSessionOutlivesInvalidation() async throws {
        LoaderSession.shared.finishTasksAndInvalidate()
        LoaderSession.shared.invalidateAndCancel()
        #expect(!LoaderSession.shared.isInvalidated)
        let (probeID, _) = Probes.make()
        let task = LoaderSession.shared.dataTask(with: URL(string: "stream://\(probeID)/10")!) { _, _, _ in }
        #expect(task.state == .suspended)
        task.cancel()
    }

    @Test("A session lets its delegate go once it has reported becoming invalid: a delegate that keeps its session leaks neither")
    func delegateReleasedAfterInvalidation() {
        final class Owner: LoaderSessionDelegate {
            let session = Locked<LoaderSession?>(nil)
            let invalid = Locked(false)
            func session(_ session: LoaderSession, didBecomeInvalidWithError error: LoadError?) { invalid.withLock { $0 = true } }
        }
        weak var released: Owner?
        do {
            let owner = Owner()
            let session = testSession(delegate: owner)
            owner.session.withLock { $0 = session }  // the cycle an app makes
            released = owner
            #expect(session.delegate === owner)
            session.finishTasksAndInvalidate()
            #expect(owner.invalid.withLock { $0 })
            #expect(session.delegate == nil)
        }
        #expect(released == nil, "the delegate outlived its invalidated session")
    }

    @Test("A download's file is the caller's alone (mode 0600, as mkstemp's), whatever the umask")
    func downloadIsPrivate() async throws {
        let (probeID, _) = Probes.make()
        let (file, _) = try await testSession().download(from: URL(string: "stream://\(probeID)/1000")!)
        defer { try? FileManager.default.removeItem(at: file) }
        let mode = try #require(FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600)
    }

    @Test("A download cancelled as its last bytes are written fails cancelled and leaves no file")
    func cancelledAtTheEndLeavesNothing() async throws {
        final class CancelOnWrite: LoadTaskDelegate {
            func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?) {
                task.cancel()
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dl-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (probeID, _) = Probes.make()
        // Under the 128 KiB batch: the one write is the last flush, after the loop's last check for cancellation.
        let session = testSession { $0.temporaryDirectory = directory }
        let error = await loadError {
            _ = try await session.download(from: URL(string: "stream://\(probeID)/1000")!, delegate: CancelOnWrite())
        }
        #expect(error?.code == .cancelled)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("upload(for:from:) sends the body and reports upload progress to the task delegate")
    func uploadProgress() async throws {
        let delegate = RecordingDelegate()
        let request = LoadRequest(url: URL(string: "upload://x")!, method: .put)
        let (data, _) = try await testSession().upload(for: request, from: Data(count: 2500), delegate: delegate)
        #expect(String(decoding: data, as: UTF8.self) == "2500")
        let events = delegate.events.withLock { $0 }
        #expect(events.filter { $0.hasPrefix("sent:") } == ["sent:1000/2500", "sent:2000/2500", "sent:2500/2500"])
    }

    @Test("upload(for:fromFile:) streams a file body")
    func uploadFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("up-\(UUID())")
        try Data(count: 123_457).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (data, _) = try await testSession().upload(for: LoadRequest(url: URL(string: "upload://x")!, method: .put), fromFile: file)
        #expect(String(decoding: data, as: UTF8.self) == "123457")
    }

    @Test("An upload file that does not exist fails with requestBodyStreamExhausted: the load's URL, the file in the reason")
    func uploadMissingFile() async {
        let file = URL(fileURLWithPath: "/nonexistent/upload-\(UUID())")
        let url = URL(string: "upload://x")!
        let error = await loadError {
            _ = try await testSession().upload(for: LoadRequest(url: url, method: .put), fromFile: file)
        }
        #expect(error?.code == .requestBodyStreamExhausted)
        #expect(error?.url == url)
        #expect(error?.description.contains(file.path) == true)
    }

    @Test("Delegate events arrive in order: response, data, completion")
    func delegateOrder() async throws {
        let delegate = RecordingDelegate()
        _ = try await testSession(delegate: delegate).data(from: URL(string: "echo:abc")!)
        #expect(delegate.events.withLock { $0 } == ["response", "data:8", "completed"])
    }

    @Test("A task delegate hears events before the session delegate, and both hear them")
    func taskAndSessionDelegates() async throws {
        let sessionDelegate = RecordingDelegate()
        let taskDelegate = RecordingDelegate()
        _ = try await testSession(delegate: sessionDelegate).data(from: URL(string: "echo:x")!, delegate: taskDelegate)
        #expect(taskDelegate.events.withLock { $0 } == ["response", "data:6", "completed"])
        #expect(sessionDelegate.events.withLock { $0 } == ["response", "data:6", "completed"])
    }

    @Test("2,000 concurrent loads on one session are each correct")
    func manyConcurrentLoads() async throws {
        // Many allocations at once: kept apart from the tests that measure peak memory.
        try await ExclusiveGate.memory.exclusive {
            let session = testSession()
            let failures = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<2000 {
                    group.addTask {
                        let (data, _) = try await session.data(from: URL(string: "echo:n\(index)")!)
                        return String(decoding: data, as: UTF8.self) == "echo:n\(index)"
                    }
                }
                var failures = 0
                for try await ok in group where !ok { failures += 1 }
                return failures
            }
            #expect(failures == 0)
            #expect(session.allTasks.isEmpty)
        }
    }

    @Test("Additional header fields from the configuration reach the handler")
    func additionalHeaders() async throws {
        let session = testSession { $0.additionalHeaderFields[HTTPField.Name("X-Echo")!] = "from-config" }
        let (_, response) = try await session.data(from: URL(string: "echo:h")!)
        #expect(response.headerFields[HTTPField.Name("X-Echo")!] == "from-config")
    }
}

/// A cache of one response, answering requests for its URL without loading (test middleware).
struct OneEntryCache: LoadMiddleware {
    let url: URL
    let body: Data
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        guard request.url == url, request.cachePolicy != .reloadIgnoringLocalCacheData else { return try await next(request) }
        let response = LoadResponse(url: url, mimeType: "text/plain", expectedContentLength: Int64(body.count))
        return LoadResult(response: response, body: ResponseBody(data: body))
    }
}

/// Rewrites each whole body with `transform` (test middleware).
struct BodyMap: LoadMiddleware {
    let transform: @Sendable (Data) -> Data
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        var result = try await next(request)
        let body = try await result.body.collect()
        let mapped = transform(body)
        result.body = ResponseBody(data: mapped)
        result.response.headerFields[.contentLength] = String(mapped.count)
        return result
    }
}
