import FoundationEssentials

/// A body passed on chunk by chunk while a copy is kept, for storing once it has arrived whole: nothing is
/// stored from a body that failed, was abandoned, was longer than the store takes, or ended short of its
/// `Content-Length`; all but an abandoned one are told (`dropped`).
struct CachingBody: AsyncSequence, Sendable {
    typealias Element = Data

    let inner: ResponseBody
    /// The most bytes kept; past it the copy is dropped and the body only passed on.
    let limit: Int
    let expectedLength: Int64?
    /// Called with the whole body when it ended as expected, before the end is passed on.
    let complete: @Sendable (Data) async -> Void
    /// Called once the copy is given up: the body failed, went past the limit or ended short.
    var dropped: @Sendable () async -> Void = {}

    func makeAsyncIterator() -> Iterator {
        Iterator(inner: inner.makeAsyncIterator(), limit: limit, expectedLength: expectedLength, complete: complete, dropped: dropped)
    }

    struct Iterator: AsyncIteratorProtocol {
        var inner: ResponseBody.Iterator
        let limit: Int
        let expectedLength: Int64?
        let complete: @Sendable (Data) async -> Void
        let dropped: @Sendable () async -> Void
        /// The copy so far; `nil` once it was given up or handed to `complete`.
        var kept: Data? = Data()

        init(inner: ResponseBody.Iterator, limit: Int, expectedLength: Int64?, complete: @escaping @Sendable (Data) async -> Void,
             dropped: @escaping @Sendable () async -> Void) {
            self.inner = inner
            self.limit = limit
            self.expectedLength = expectedLength
            self.complete = complete
            self.dropped = dropped
        }

        mutating func next(isolation actor: isolated (any Actor)?) async throws -> Data? {
            try await next()
        }

        mutating func next() async throws -> Data? {
            let chunk: Data?
            do {
                chunk = try await inner.next()
            } catch {
                await giveUp()
                throw error
            }
            guard let chunk else {
                if let whole = kept, expectedLength.map({ $0 == Int64(whole.count) }) ?? true {
                    kept = nil
                    await complete(whole)
                }
                await giveUp()
                return nil
            }
            if kept != nil {
                if kept!.count + chunk.count > limit { await giveUp() } else { kept!.append(chunk) }
            }
            return chunk
        }

        /// Drops the copy, and tells so the first time.
        private mutating func giveUp() async {
            guard kept != nil else { return }
            kept = nil
            await dropped()
        }
    }
}

/// A body that fails with `error` when read: one whose bytes were read early and failed then.
struct FailedBody: AsyncSequence, Sendable {
    typealias Element = Data
    let error: any Error

    func makeAsyncIterator() -> Iterator { Iterator(error: error) }

    struct Iterator: AsyncIteratorProtocol {
        let error: any Error
        func next() async throws -> Data? { throw error }
    }
}
