import Foundation
@testable import Loader
import Testing

/// What the cache layer's body wrapper stores: only a body that arrived whole, within the limit.
@Suite("HTTP cache: the body kept while it streams")
struct CachingBodyTests {
    struct Broken: Error {}

    /// Reads `chunks` (then `error`, if any) through a caching body; what the reader got, whether it failed, and
    /// what was stored.
    private func run(_ chunks: [String], failing error: (any Error)? = nil, limit: Int = 100, expected: Int64? = nil)
    async -> (read: String, failed: Bool, stored: [Data], drops: Int) {
        let stored = Locked([Data]())
        let drops = Locked(0)
        let source = AsyncThrowingStream<Data, any Error> { continuation in
            for chunk in chunks { continuation.yield(Data(chunk.utf8)) }
            continuation.finish(throwing: error)
        }
        let body = CachingBody(inner: ResponseBody(source), limit: limit, expectedLength: expected, complete: { data in
            stored.withLock { $0.append(data) }
        }, dropped: {
            drops.withLock { $0 += 1 }
        })
        var read = Data()
        var failed = false
        do {
            for try await chunk in ResponseBody(body) { read.append(chunk) }
        } catch {
            failed = true
        }
        return (String(decoding: read, as: UTF8.self), failed, stored.withLock { $0 }, drops.withLock { $0 })
    }

    @Test("A whole body is passed on and stored once")
    func whole() async {
        let result = await run(["ab", "cd"], expected: 4)
        #expect(result.read == "abcd")
        #expect(!result.failed)
        #expect(result.stored == [Data("abcd".utf8)])
        #expect(result.drops == 0)
    }

    @Test("A body short of its Content-Length is passed on and not stored")
    func short() async {
        let result = await run(["ab"], expected: 4)
        #expect(result.read == "ab")
        #expect(result.stored.isEmpty)
        #expect(result.drops == 1, "the layer is told, to remove the older entry this one replaces")
    }

    @Test("A body past the limit is passed on whole and not stored")
    func overLimit() async {
        let result = await run(["abc", "def", "g"], limit: 6)
        #expect(result.read == "abcdefg")
        #expect(result.stored.isEmpty)
        #expect(result.drops == 1, "told once, when the copy went past the limit")
    }

    @Test("A body that fails is not stored, and the reader gets the failure")
    func failing() async {
        let result = await run(["ab", "cd"], failing: Broken(), expected: nil)
        #expect(result.failed)
        #expect(result.read == "abcd")
        #expect(result.stored.isEmpty)
        #expect(result.drops == 1)
    }
}
