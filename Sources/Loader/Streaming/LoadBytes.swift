import FoundationEssentials
import Synchronization

/// A response body as a stream of bytes, from ``LoaderSession/bytes(for:delegate:)``.
///
/// Read it once, to the end, with one iterator, as bytes, ``chunks`` or ``lines``. The task completes when the
/// stream ends; leaving a `for try await` loop over it early (releasing its iterator), or dropping the stream
/// unread, cancels the load, so a second loop after an early exit throws ``LoadError/Code/cancelled``.
/// Once the stream has ended, reading again gives nothing: the bytes are not replayed, and the task reports
/// none after its completion.
public struct LoadBytes: AsyncSequence, Sendable {
    /// One byte of the body.
    public typealias Element = UInt8
    /// Reading fails with a ``LoadError``.
    public typealias Failure = any Error

    let body: ResponseBody
    let completion: TaskCompletion

    init(body: ResponseBody, task: LoadTask) {
        self.body = body
        self.completion = TaskCompletion(task: task)
        task.handBodyToReader()
    }

    /// The task this stream belongs to.
    public var task: LoadTask { completion.task }

    /// The body as chunks, for readers that want more than a byte at a time.
    public var chunks: Chunks { Chunks(body: body, completion: completion) }

    /// The body as lines of UTF-8 text, split at `\n`, `\r\n` or `\r`, without the line ends.
    public var lines: Lines { Lines(chunks: chunks) }

    /// Starts reading bytes.
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator())
    }

    /// Reads the body byte by byte.
    public struct Iterator: AsyncIteratorProtocol {
        var chunks: Chunks.Iterator
        var current = Data()
        var index = 0

        /// The same as ``next()``, on the caller's executor: what `for try await` calls (the standard
        /// library's default would switch executors at every element).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> UInt8? {
            try await next()
        }

        /// The next byte, or `nil` at the end of the body.
        public mutating func next() async throws -> UInt8? {
            while index >= current.count {
                guard let chunk = try await chunks.next() else { return nil }
                current = chunk
                index = 0
            }
            defer { index += 1 }
            return current[current.startIndex + index]
        }
    }

    /// The body chunk by chunk, completing the task at its end.
    public struct Chunks: AsyncSequence, Sendable {
        /// A chunk of the body.
        public typealias Element = Data
        /// Reading fails with a ``LoadError``.
        public typealias Failure = any Error
        let body: ResponseBody
        let completion: TaskCompletion

        /// Starts reading chunks.
        public func makeAsyncIterator() -> Iterator {
            Iterator(body: body.makeAsyncIterator(), completion: completion,
                     reading: ReadingLifetime(body: body, completion: completion))
        }

        /// Reads the body chunk by chunk. Releasing it before the end cancels the load.
        public struct Iterator: AsyncIteratorProtocol {
            var body: ResponseBody.Iterator
            let completion: TaskCompletion
            /// Shared by the copies of this iterator: the last one released before the end cancels the load.
            let reading: ReadingLifetime

            /// The same as ``next()``, on the caller's executor: what `for try await` calls (the standard
            /// library's default would switch executors at every element).
            public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Data? {
                try await next()
            }

            /// The next chunk, or `nil` at the end of the body.
            public mutating func next() async throws -> Data? {
                // Read to its end already, through this iterator or another: nothing more, or the same failure.
                if completion.isFinished {
                    if let error = completion.task.error { throw error }
                    return nil
                }
                let task = completion.task
                await task.waitWhileSuspended()
                do {
                    guard let chunk = try await body.next() else {
                        let error = completion.finish(nil)
                        // The stream ends once the delegates heard its end, as an async load returns.
                        await task.delegatesHeard()
                        if let error { throw error }
                        return nil
                    }
                    try task.checkCancelled()
                    task.didReceive(chunk, notify: true)
                    if task.hasDelegates {
                        // What the delegates did as they heard of it (suspended or cancelled the task) counts before
                        // the caller has it.
                        await task.delegatesHeard()
                        try task.checkCancelled()
                    }
                    return chunk
                } catch {
                    let failure = LoadError.wrapping(error, url: task.currentRequest.url)
                    let error = completion.finish(failure) ?? failure
                    await task.delegatesHeard()
                    throw error
                }
            }
        }
    }

    /// The body as lines of text.
    public struct Lines: AsyncSequence, Sendable {
        /// One line, without its line end.
        public typealias Element = String
        /// Reading fails with a ``LoadError``.
        public typealias Failure = any Error
        let chunks: Chunks

        /// Starts reading lines.
        public func makeAsyncIterator() -> Iterator {
            Iterator(chunks: chunks.makeAsyncIterator())
        }

        /// Reads the body line by line.
        public struct Iterator: AsyncIteratorProtocol {
            var chunks: Chunks.Iterator
            var pending: [UInt8] = []
            var current = Data()
            var index = 0
            var skipLineFeed = false
            var ended = false

            /// The same as ``next()``, on the caller's executor: what `for try await` calls (the standard
            /// library's default would switch executors at every element).
            public mutating func next(isolation actor: isolated (any Actor)?) async throws -> String? {
                try await next()
            }

            /// The next line, or `nil` at the end of the body.
            public mutating func next() async throws -> String? {
                while true {
                    while index < current.count {
                        let byte = current[current.startIndex + index]
                        index += 1
                        if skipLineFeed {
                            skipLineFeed = false
                            if byte == 0x0A { continue }
                        }
                        if byte == 0x0A || byte == 0x0D {
                            skipLineFeed = byte == 0x0D
                            defer { pending.removeAll(keepingCapacity: true) }
                            return String(decoding: pending, as: UTF8.self)
                        }
                        pending.append(byte)
                    }
                    guard !ended else { return nil }
                    if let chunk = try await chunks.next() {
                        current = chunk
                        index = 0
                    } else {
                        ended = true
                        guard !pending.isEmpty else { return nil }
                        defer { pending.removeAll() }
                        return String(decoding: pending, as: UTF8.self)
                    }
                }
            }
        }
    }
}

/// Cancels a streamed load whose reader let go of its iterator before the end: a loop left with `break`
/// or by a thrown error while the ``LoadBytes`` value itself is still alive. Without it the handler would keep
/// its connection and fill its buffer until the stream was released.
final class ReadingLifetime: Sendable {
    private let body: ResponseBody
    private let completion: TaskCompletion

    init(body: ResponseBody, completion: TaskCompletion) {
        self.body = body
        self.completion = completion
    }

    deinit {
        guard !completion.isFinished else { return }
        body.discard()
        completion.cancel(because: "the reader stopped before the end of the byte stream")
    }
}

/// Completes a streamed task exactly once: at the end of its body, on an error, or — if the stream is
/// dropped unread — as cancelled.
final class TaskCompletion: Sendable {
    let task: LoadTask
    private let done = Atomic<Bool>(false)

    init(task: LoadTask) { self.task = task }

    /// Whether the stream has ended (``finish(_:)`` was called).
    var isFinished: Bool { done.load(ordering: .acquiring) }

    /// Completes the task; returns the error it completed with.
    func finish(_ error: LoadError?) -> LoadError? {
        guard done.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return task.error
        }
        return task.complete(with: error)
    }

    /// Completes the task as cancelled, for `reason`, unless the stream has ended.
    func cancel(because reason: String) {
        _ = finish(LoadError(.cancelled, url: task.currentRequest.url, reason: reason))
    }

    deinit {
        cancel(because: "the byte stream was released before its end")
    }
}
