import NIOCore
import NIOPosix

/// A task executor that runs jobs on one of the HTTP handler's event loops.
///
/// A task that prefers it (`withTaskExecutorPreference`) runs on the same thread as its connections, so
/// a response wakes the waiting code without a hand-off to another thread: sequential requests cost
/// fewer thread wake-ups and system calls. New connections made from such a task open on its loop,
/// and idle connections on that loop are reused first.
///
/// ```swift
/// try await withTaskExecutorPreference(HTTPSchemeHandler.taskExecutor()) {
///     for url in urls { _ = try await session.data(from: url) }
/// }
/// ```
///
/// Work that blocks or computes for long inside such a task delays every connection on that loop: keep
/// it to I/O-bound code. Nothing runs here unless a caller asks for it.
public final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop the jobs run on.
    public let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `job` on the event loop (queued behind the loop's current work).
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}

extension HTTPSchemeHandler {
    /// An executor over one of the HTTP event loops, taken in turn; see ``EventLoopTaskExecutor``.
    public static func taskExecutor() -> EventLoopTaskExecutor {
        HTTPEngine.shared.nextExecutor()
    }
}
