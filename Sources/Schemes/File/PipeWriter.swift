import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes to a descriptor opened without blocking (a named pipe, a device; a regular file never makes it wait)
/// in a way that suits a task on Swift's cooperative pool, and a library inside an app:
///
/// - while the reader has no room (`EAGAIN`), the thread waits a millisecond at most for it, then the task sleeps,
///   1 ms doubling to ``longestWait``, rather than holding one of the pool's few threads in the kernel: so a cancel
///   or a request timeout ends the load even when the reader has stopped reading;
/// - a pipe whose reader has gone fails with `EPIPE`, without the `SIGPIPE` that would end the whole process
///   (which an app, unlike the `loadurl` CLI, has no reason to ignore).
enum PipeWriter {
    /// The longest sleep between two tries of a pipe that has no room.
    static let longestWait = Duration.milliseconds(50)

    /// Writes all of `data` to `fd`; throws `CancellationError` when the task is cancelled while waiting, and
    /// ``Failure`` with the `errno` of a write that failed.
    static func writeAll(_ data: Data, to fd: Int32) async throws {
        var offset = 0
        var wait = Duration.milliseconds(1)
        while offset < data.count {
            let (wrote, code) = data.withUnsafeBytes { bytes in
                writeHoldingSIGPIPE(fd, bytes.baseAddress! + offset, bytes.count - offset)
            }
            if wrote > 0 {
                offset += wrote
                wait = .milliseconds(1)
                continue
            }
            if wrote < 0, code == EINTR { continue }
            guard wrote < 0, code == EAGAIN || code == EWOULDBLOCK else { throw Failure(code: wrote == 0 ? EIO : code) }
            try Task.checkCancellation()
            // A reader that keeps up makes room within a millisecond: waited for in the kernel, that short (a sleep
            // of the task per full pipe held a fast reader to about a pipe's buffer per millisecond).
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&ready, 1, 1) > 0 { continue }
            try await Task.sleep(for: wait)
            wait = min(wait * 2, longestWait)
        }
    }

    /// A write that failed, with its `errno`.
    struct Failure: Error {
        let code: Int32
    }

    /// One `write(2)` with `SIGPIPE` blocked on this thread, and the one it raised (a reader gone) taken back
    /// before the thread's mask is restored: the signal is directed at the writing thread, so it is this
    /// thread's to take. Returns the result and `errno`.
    private static func writeHoldingSIGPIPE(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> (Int, Int32) {
        #if canImport(Darwin)
        // No sigtimedwait there; the descriptor itself can be told to raise none.
        _ = fcntl(fd, F_SETNOSIGPIPE, 1)
        let wrote = write(fd, pointer, count)
        return (wrote, errno)
        #else
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        // One pending from elsewhere before this write is not this write's to take.
        var pending = sigset_t()
        sigpending(&pending)
        let pendingBefore = sigismember(&pending, SIGPIPE) == 1
        let wrote = write(fd, pointer, count)
        let code = errno
        if wrote < 0, code == EPIPE, !pendingBefore {
            var now = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&pipeSignal, nil, &now) < 0, errno == EINTR {}
        }
        return (wrote, code)
        #endif
    }
}
