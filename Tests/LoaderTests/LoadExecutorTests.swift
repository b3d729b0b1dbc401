import Dispatch
import Foundation
import Loader
import Synchronization
import Testing

/// A task executor over one dispatch queue, which can tell whether the current code runs on it.
private final class QueueExecutor: TaskExecutor {
    let queue = DispatchQueue(label: "load-executor-test")
    private let key = DispatchSpecificKey<Bool>()
    let jobs = Atomic<Int>(0)

    init() { queue.setSpecific(key: key, value: true) }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

    func enqueue(_ job: consuming ExecutorJob) {
        jobs.add(1, ordering: .relaxed)
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

private let queueExecutor = QueueExecutor()
/// Where `load()` found itself after each suspension: true when on the preferred executor.
private let placements = Mutex<[Bool]>([])

/// Names `queueExecutor` as its load executor and records where `load()` runs after suspending.
private final class PinnedHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["pinned"] }
    override var loadExecutor: (any TaskExecutor)? { queueExecutor }
    override func load() async throws {
        // The load starts on the caller's thread (see `startLoading`) and moves at its first real suspension.
        // A yield always suspends; a short sleep on a loaded machine may be over before the task suspends,
        // and then the task goes on where it was (seen once under the thread sanitizer: [false, true, true]).
        await Task.yield()
        for _ in 0..<3 {
            try await Task.sleep(for: .milliseconds(1))
            placements.withLock { $0.append(queueExecutor.isCurrent) }
        }
        let body = Data("pinned".utf8)
        client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(body.count)))
        try await client.handler(self, deliver: body)
    }
}

@Suite("A handler's load executor")
struct LoadExecutorTests {
    @Test("load() resumes on the executor its handler names, after every suspension")
    func resumesOnItsExecutor() async throws {
        placements.withLock { $0.removeAll() }
        let jobsBefore = queueExecutor.jobs.load(ordering: .relaxed)
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [PinnedHandler.self]
        let (data, _) = try await LoaderSession(configuration: configuration).data(from: URL(string: "pinned:x")!)
        #expect(String(decoding: data, as: UTF8.self) == "pinned")
        #expect(placements.withLock { $0 } == [true, true, true])
        #expect(queueExecutor.jobs.load(ordering: .relaxed) - jobsBefore >= 3)
    }
}

/// Whether `load()` began on `queueExecutor`'s queue, for each load of `free:`.
private let startedOnCaller = Mutex<[Bool]>([])

/// Names no load executor; records where `load()` begins.
private final class FreeHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["free"] }
    // Not `@concurrent`: with NonisolatedNonsendingByDefault (on here) this would run wherever its task
    // starts, so the test also shows that the task does not start on the caller's executor.
    override func load() async throws {
        startedOnCaller.withLock { $0.append(queueExecutor.isCurrent) }
        client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: 0))
    }
}

extension LoadExecutorTests {
    @Test("load() without a load executor never runs on the caller's executor (a blocking handler holds nobody up)")
    func startsOffTheCallersExecutor() async throws {
        startedOnCaller.withLock { $0.removeAll() }
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [FreeHandler.self]
        let session = LoaderSession(configuration: configuration)
        try await withTaskExecutorPreference(queueExecutor) {
            for _ in 0..<5 {
                #expect(queueExecutor.isCurrent)
                _ = try await session.data(from: URL(string: "free:x")!)
            }
        }
        #expect(startedOnCaller.withLock { $0 } == [false, false, false, false, false])
    }
}
