import Foundation
@testable import Loader
import Testing

/// Two answers for one URL stored at once: the newer one stays, whichever write lands last.
@Suite("HTTP cache: pending stores of one URL, older and newer")
struct PendingStoresTests {
    /// A memory store whose write of the entry with `gatedBody` waits, before or after it writes, until the gate opens.
    final class GatedCache: ResponseCache {
        let inner = MemoryResponseCache()
        let gatedBody: Data
        let writesFirst: Bool
        let gate = Locked<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
        let reachedGate = Locked(false)

        init(gatedBody: Data, writesFirst: Bool) {
            self.gatedBody = gatedBody
            self.writesFirst = writesFirst
        }

        var maximumEntrySize: Int { inner.maximumEntrySize }
        func cachedResponse(for key: String) async -> CachedResponse? { await inner.cachedResponse(for: key) }
        func removeCachedResponse(for key: String) async { await inner.removeCachedResponse(for: key) }
        func removeAllCachedResponses() async { await inner.removeAllCachedResponses() }

        func store(_ response: CachedResponse, for key: String) async {
            guard response.data == gatedBody else { return await inner.store(response, for: key) }
            if writesFirst { await inner.store(response, for: key) }
            await withCheckedContinuation { waiter in
                let open = gate.withLock { gate in
                    if !gate.open { gate.waiter = waiter }
                    return gate.open
                }
                reachedGate.withLock { $0 = true }
                if open { waiter.resume() }
            }
            if !writesFirst { await inner.store(response, for: key) }
        }

        func open() {
            let waiter = gate.withLock { gate in
                gate.open = true
                defer { gate.waiter = nil }
                return gate.waiter
            }
            waiter?.resume()
        }
    }

    private func entry(_ body: String, at seconds: TimeInterval) -> CachedResponse {
        let url = URL(string: "http://example.test/feed")!
        return CachedResponse(response: LoadResponse(url: url, status: .ok, headerFields: [.cacheControl: "max-age=600"]),
                              data: Data(body.utf8), requestedAt: Date(timeIntervalSince1970: seconds),
                              storedAt: Date(timeIntervalSince1970: seconds + 1))
    }

    @Test("An older answer's write that lands after a newer one's is taken out; one that landed first leaves the newer entry in place",
          arguments: [true, false])
    func newerStays(olderWritesFirst: Bool) async throws {
        let registry = PendingStores()
        let key = "http://example.test/feed-\(UUID().uuidString)"
        let older = entry("older", at: 100), newer = entry("newer", at: 200)
        let cache = GatedCache(gatedBody: older.data, writesFirst: olderWritesFirst)
        let olderTicket = registry.ticket(for: key)
        let newerTicket = registry.ticket(for: key)
        let storing = Task { await olderTicket.store(older, in: cache) }
        for _ in 0..<500 where !cache.reachedGate.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        try #require(cache.reachedGate.withLock { $0 })
        await newerTicket.store(newer, in: cache)
        cache.open()
        await storing.value
        let held = await cache.cachedResponse(for: key)?.data
        if olderWritesFirst {
            #expect(held == newer.data, "the newer entry was taken out")
        } else {
            #expect(held == nil, "the older answer, written last, was left in place of the newer")
        }
    }

    @Test("An unsafe request that voids the key while an answer is written takes the entry out again")
    func voidedWhileWriting() async throws {
        let registry = PendingStores()
        let key = "http://example.test/feed-\(UUID().uuidString)"
        let answer = entry("answer", at: 100)
        let cache = GatedCache(gatedBody: answer.data, writesFirst: true)
        let ticket = registry.ticket(for: key)
        let storing = Task { await ticket.store(answer, in: cache) }
        for _ in 0..<500 where !cache.reachedGate.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        try #require(cache.reachedGate.withLock { $0 })
        registry.void(key)
        await cache.removeCachedResponse(for: key)
        cache.open()
        await storing.value
        #expect(await cache.cachedResponse(for: key) == nil)
    }
}
