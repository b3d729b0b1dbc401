import DequeModule
import FoundationEssentials
import Loader

/// The request body of an upload, between the task that reads it (any kind of ``RequestBody``, async) and
/// libcurl's read callback (synchronous, on the engine's thread). Holds at most about `limit` bytes: the
/// reading task waits while it is full, and the callback pauses libcurl while it is empty.
final class UploadBuffer: Sendable {
    enum Take { case copied(Int), wait, end, failed }

    private struct State {
        var chunks: Deque<Data> = []
        var offset = 0
        var buffered = 0
        var ended = false
        var failure: (any Error)?
        var readerWaiting = false
        var stopped = false
        var producerWaiter: CheckedContinuation<Void, Never>?
        /// Waits for the first bytes, the end or a failure (``waitForStart()``).
        var startWaiter: CheckedContinuation<Void, Never>?
        var resume: (@Sendable () -> Void)?
    }

    let knownLength: Int64?
    private let body: RequestBody
    private let limit: Int
    private let state = Locked(State())
    private let pump = Locked<Task<Void, Never>?>(nil)

    init(body: RequestBody, limit: Int = 1024 * 1024) {
        self.body = body
        self.knownLength = body.knownLength
        self.limit = limit
    }

    /// Why reading the body failed, if it did.
    var failure: (any Error)? { state.withLock { $0.failure } }

    /// Starts reading the body; `resume` wakes libcurl when bytes arrive after it was paused.
    func start(resume: @escaping @Sendable () -> Void) {
        state.withLock { $0.resume = resume }
        let task = Task { [self] in
            do {
                for try await chunk in body.chunks() where !chunk.isEmpty {
                    await append(chunk)
                    if Task.isCancelled { return }
                }
                finish(nil)
            } catch {
                finish(error)
            }
        }
        pump.withLock { $0 = task }
    }

    /// Stops reading (the transfer ended, or its load was cancelled before it began).
    func stop() {
        pump.withLock { $0 }?.cancel()
        let (waiter, startWaiter) = state.withLock { state in
            state.stopped = true
            defer { state.producerWaiter = nil; state.startWaiter = nil }
            return (state.producerWaiter, state.startWaiter)
        }
        waiter?.resume()
        startWaiter?.resume()
    }

    /// Returns once the body has given its first bytes, ended (an empty body) or failed (``failure``), or
    /// reading was stopped: before the server is told to store a file (which empties one it has), so that a body
    /// that cannot be read at all (a missing file) fails without touching it, as curl's `-T` does.
    func waitForStart() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if !state.chunks.isEmpty || state.ended || state.stopped { return true }
                state.startWaiter = waiter
                return false
            }
            if ready { waiter.resume() }
        }
    }

    private func append(_ chunk: Data) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let (resume, proceed) = state.withLock { state -> ((@Sendable () -> Void)?, Bool) in
                // Stopped while the chunk was read: nobody takes it, and nobody would wake a wait for room.
                guard !state.stopped else { return (nil, true) }
                state.chunks.append(chunk)
                state.buffered += chunk.count
                let resume = state.readerWaiting ? state.resume : nil
                state.readerWaiting = false
                if state.buffered >= limit {
                    state.producerWaiter = waiter
                    return (resume, false)
                }
                return (resume, true)
            }
            takeStartWaiter()?.resume()
            resume?()
            if proceed { waiter.resume() }
        }
    }

    private func finish(_ error: (any Error)?) {
        let resume = state.withLock { state -> (@Sendable () -> Void)? in
            state.ended = true
            state.failure = error
            defer { state.readerWaiting = false }
            return state.readerWaiting ? state.resume : nil
        }
        takeStartWaiter()?.resume()
        resume?()
    }

    private func takeStartWaiter() -> CheckedContinuation<Void, Never>? {
        state.withLock { state in
            defer { state.startWaiter = nil }
            return state.startWaiter
        }
    }

    /// Copies the next bytes for libcurl, or says why there are none.
    func take(into buffer: UnsafeMutableRawBufferPointer) -> Take {
        let (result, waiter) = state.withLock { state -> (Take, CheckedContinuation<Void, Never>?) in
            guard let first = state.chunks.first else {
                if state.failure != nil { return (.failed, nil) }
                if state.ended { return (.end, nil) }
                state.readerWaiting = true
                return (.wait, nil)
            }
            let count = min(buffer.count, first.count - state.offset)
            first.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + state.offset, byteCount: count)
            }
            state.offset += count
            state.buffered -= count
            if state.offset == first.count {
                state.chunks.removeFirst()
                state.offset = 0
            }
            var waiter: CheckedContinuation<Void, Never>?
            if state.buffered < limit {
                waiter = state.producerWaiter
                state.producerWaiter = nil
            }
            return (.copied(count), waiter)
        }
        waiter?.resume()
        return result
    }
}
