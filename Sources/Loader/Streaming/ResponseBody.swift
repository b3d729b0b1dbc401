import FoundationEssentials
import Synchronization

/// A response body: an asynchronous sequence of chunks, read once, with backpressure.
///
/// While nobody reads, the handler is held back once the buffer passes the session's
/// `bodyBufferLimit`; so a body of any size streams in bounded memory. If every copy of the body (and of its
/// iterator) is released before the end, the load is cancelled and its handler stopped.
///
/// Middleware may wrap a body (to decode it, count it, or answer from a cache) with
/// ``init(_:)`` or ``init(data:)``.
public struct ResponseBody: AsyncSequence, Sendable {
    /// A chunk of the body.
    public typealias Element = Data
    /// Reading a body fails with a ``LoadError``.
    public typealias Failure = any Error

    enum Source: Sendable {
        case empty
        case data(Data)
        case driver(HandlerDriver, BodyLifetime)
        /// Chunks from a sequence, and how to give up the body they are made from (if any).
        case sequence(@Sendable () -> AnyChunkIterator, discard: (@Sendable () -> Void)?)
    }

    let source: Source

    init(driver: HandlerDriver) {
        self.source = .driver(driver, BodyLifetime(driver: driver))
    }

    /// A body of the bytes in `data`, delivered as one chunk.
    public init(data: Data) {
        self.source = data.isEmpty ? .empty : .data(data)
    }

    /// A body read from any asynchronous sequence of chunks.
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == Data {
        self.source = .sequence(Self.iterating(chunks), discard: nil)
    }

    /// A body read from chunks made out of `inner` (a decoder or a counter wrapped around it): discarding this
    /// body discards `inner`, so that a layer which gives the body up (a redirect that is followed) stops the
    /// load underneath instead of leaving it to fill its buffer.
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, wrapping inner: ResponseBody) where Chunks.Element == Data {
        self.source = .sequence(Self.iterating(chunks), discard: { inner.discard() })
    }

    private static func iterating<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) -> @Sendable () -> AnyChunkIterator
    where Chunks.Element == Data {
        {
            var iterator = chunks.makeAsyncIterator()
            return AnyChunkIterator { try await iterator.next(isolation: #isolation) }
        }
    }

    /// A body with no bytes.
    public static var empty: ResponseBody { ResponseBody(data: Data()) }

    /// Reads the whole body into memory. Use it only when the caller asked for the whole body.
    /// - Parameter limit: Fails with ``LoadError/Code/dataLengthExceedsMaximum`` past this many bytes.
    @concurrent public func collect(upTo limit: Int = .max) async throws -> Data {
        var data = Data()
        for try await chunk in self {
            guard data.count + chunk.count <= limit else {
                discard()
                // The URL when the body knows it (read from its load); a caller's own wrapping names it otherwise.
                let url: URL? = if case .driver(let driver, _) = source { driver.url } else { nil }
                throw LoadError(.dataLengthExceedsMaximum, url: url, reason: "the body is larger than \(limit) bytes")
            }
            data.append(chunk)
        }
        return data
    }

    /// Gives the body up: the load is cancelled and its handler stopped. For a middleware that will not
    /// pass this body on (a redirect that is followed, a cache hit that replaces it).
    public func discard() {
        switch source {
        case .driver(let driver, _): driver.cancel(with: LoadError(.cancelled, url: driver.url))
        case .sequence(_, let discard?): discard()
        case .empty, .data, .sequence: break
        }
    }

    /// The bytes of a body that came whole (one chunk or none), which needs no reading; `nil` for one that
    /// streams.
    var whole: Data? {
        switch source {
        case .empty: return Data()
        case .data(let data): return data
        case .driver, .sequence: return nil
        }
    }

    /// Starts reading. A body is read once.
    public func makeAsyncIterator() -> Iterator {
        switch source {
        case .empty: return Iterator(state: .done)
        case .data(let data): return Iterator(state: .data(data))
        case .driver(let driver, let lifetime): return Iterator(state: .driver(driver, lifetime))
        case .sequence(let make, _): return Iterator(state: .sequence(make()))
        }
    }

    /// Reads a body chunk by chunk.
    public struct Iterator: AsyncIteratorProtocol {
        enum State {
            case done
            case data(Data)
            case driver(HandlerDriver, BodyLifetime)
            case sequence(AnyChunkIterator)
        }
        var state: State

        /// The same as ``next()``, on the caller's executor: what `for try await` calls (the standard
        /// library's default would switch executors at every element).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Data? {
            try await next()
        }

        /// The next chunk, or `nil` at the end of the body.
        public mutating func next() async throws -> Data? {
            switch state {
            case .done:
                return nil
            case .data(let data):
                state = .done
                return data
            case .driver(let driver, let lifetime):
                do {
                    guard let chunk = try await driver.nextChunk() else {
                        lifetime.markEnded()
                        state = .done
                        return nil
                    }
                    return chunk
                } catch {
                    lifetime.markEnded()
                    state = .done
                    throw error
                }
            case .sequence(let iterator):
                guard let chunk = try await iterator.next() else {
                    state = .done
                    return nil
                }
                return chunk
            }
        }
    }
}

/// A type-erased chunk iterator (a class so that a `mutating` iterator can live inside a closure).
final class AnyChunkIterator: @unchecked Sendable {
    // @unchecked: an iterator is used by one reader at a time, as AsyncIteratorProtocol requires.
    private let nextChunk: () async throws -> Data?
    init(_ next: @escaping () async throws -> Data?) { self.nextChunk = next }
    func next() async throws -> Data? { try await nextChunk() }
}

/// Cancels a load whose body was dropped before its end.
final class BodyLifetime: Sendable {
    private let driver: HandlerDriver
    private let ended = Atomic<Bool>(false)

    init(driver: HandlerDriver) { self.driver = driver }

    func markEnded() { ended.store(true, ordering: .releasing) }

    deinit {
        if !ended.load(ordering: .acquiring) {
            driver.cancel(with: LoadError(.cancelled, url: driver.url, reason: "the response body was released unread"))
        }
    }
}

/// What a layer of the chain returns: the response head and its streaming body.
public struct LoadResult: Sendable {
    /// The response head.
    public var response: LoadResponse {
        get { storage.response }
        set { storage = Storage(response: newValue, body: storage.body, redirectRequest: storage.redirectRequest) }
    }
    /// The body, streamed.
    public var body: ResponseBody {
        get { storage.body }
        set { storage = Storage(response: storage.response, body: newValue, redirectRequest: storage.redirectRequest) }
    }
    /// A redirect the handler proposed (``SchemeHandlerClient/handler(_:wasRedirectedTo:redirectResponse:)``),
    /// for the redirect middleware to follow or not. HTTP redirects are recognised by status and `Location`.
    public var redirectRequest: LoadRequest? {
        get { storage.redirectRequest }
        set { storage = Storage(response: storage.response, body: storage.body, redirectRequest: newValue) }
    }

    /// The three, held by reference. Every layer of the chain returns a result through an async function,
    /// whose frame (allocated on every load) holds a slot for it, and often a copy: inline, a result was 112
    /// bytes with six references to retain on each copy; boxed, it is one. Never changed in place (a change
    /// makes a new box), so reading needs no exclusivity check.
    private final class Storage: Sendable {
        let response: LoadResponse
        let body: ResponseBody
        let redirectRequest: LoadRequest?

        init(response: LoadResponse, body: ResponseBody, redirectRequest: LoadRequest?) {
            self.response = response
            self.body = body
            self.redirectRequest = redirectRequest
        }
    }

    private var storage: Storage

    /// Makes a result.
    public init(response: LoadResponse, body: ResponseBody, redirectRequest: LoadRequest? = nil) {
        storage = Storage(response: response, body: body, redirectRequest: redirectRequest)
    }
}
