import FoundationEssentials

/// A ``ResponseCache`` in memory, shared by the sessions given it and gone with the process: the least
/// recently used entries go first once the entries together pass ``capacity``.
public final class MemoryResponseCache: ResponseCache {
    /// Bytes the entries may take together (``CachedResponse/cost``).
    public let capacity: Int
    /// The largest body kept: a twentieth of the capacity, so that one response cannot empty the cache.
    public var maximumEntrySize: Int { capacity / 20 }

    private struct Entry {
        var response: CachedResponse
        var cost: Int
        var lastUse: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var total = 0
        var clock: UInt64 = 0
    }

    private let state = Locked(State())

    /// Makes an empty cache.
    /// - Parameter capacity: Bytes the entries may take together (10 MiB by default).
    public init(capacity: Int = 10 * 1024 * 1024) {
        self.capacity = max(0, capacity)
    }

    /// Bytes the entries take now.
    public var currentSize: Int { state.withLock { $0.total } }

    /// The number of entries.
    public var count: Int { state.withLock { $0.entries.count } }

    public func cachedResponse(for key: String) async -> CachedResponse? {
        state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return entry.response
        }
    }

    public func store(_ response: CachedResponse, for key: String) async {
        let cost = response.cost
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) { state.total -= old.cost }
            guard response.data.count <= maximumEntrySize, cost <= capacity else { return }
            state.clock += 1
            state.entries[key] = Entry(response: response, cost: cost, lastUse: state.clock)
            state.total += cost
            // Least recently used first. A scan per eviction: entries are few (each is at least its head's size
            // and the capacity is bounded), and a store is rare next to a look-up.
            while state.total > capacity, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.entries[oldest.key] = nil
                state.total -= oldest.value.cost
            }
        }
    }

    public func removeCachedResponse(for key: String) async {
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) { state.total -= old.cost }
        }
    }

    public func removeAllCachedResponses() async {
        state.withLock { $0 = State() }
    }
}
