/// The cache stores still waiting for their responses, by key, across every session of the process.
///
/// A `GET` is stored only once its body has arrived whole, which may be long after its request went out. An unsafe
/// request that changed the same URL meanwhile (RFC 9111 §4.4) voids the pending store, so that the body still
/// arriving does not bring back what the change made out of date. So does a newer request's store: tickets are
/// numbered as their requests go out, and the first of them to write (or remove) an entry voids those taken before
/// it, whose answers are older (RFC 9111 §4: the most recent response is the one to use). Only live tickets are
/// held: a ticket leaves when its store ends, is given up, or is voided.
final class PendingStores: Sendable {
    /// The one registry: a store shared by sessions is kept by all of them.
    static let shared = PendingStores()

    private struct State {
        var nextID = 0
        /// The live tickets' numbers, by key.
        var live: [String: Set<Int>] = [:]
    }

    private let state = Locked(State())

    /// A ticket for a store under `key`, valid until an unsafe request voids the key.
    func ticket(for key: String) -> Ticket {
        let id = state.withLock { state in
            state.nextID += 1
            state.live[key, default: []].insert(state.nextID)
            return state.nextID
        }
        return Ticket(key: key, id: id, registry: self)
    }

    /// Voids every pending store under `key`.
    func void(_ key: String) {
        _ = state.withLock { $0.live.removeValue(forKey: key) }
    }

    /// Whether `ticket` is live; if it is, voids the tickets taken before it under its key, whose answers are older.
    fileprivate func claim(_ ticket: Ticket) -> Bool {
        state.withLock { state in
            guard let ids = state.live[ticket.key], ids.contains(ticket.id) else { return false }
            state.live[ticket.key] = ids.filter { $0 >= ticket.id }
            return true
        }
    }

    fileprivate func isLive(_ ticket: Ticket) -> Bool {
        state.withLock { $0.live[ticket.key]?.contains(ticket.id) ?? false }
    }

    fileprivate func release(_ ticket: Ticket) {
        state.withLock { state in
            guard var ids = state.live[ticket.key], ids.remove(ticket.id) != nil else { return }
            state.live[ticket.key] = ids.isEmpty ? nil : ids
        }
    }

    /// One pending store's right to write its entry; released when the last reference to it goes.
    final class Ticket: Sendable {
        let key: String
        let id: Int
        private let registry: PendingStores

        fileprivate init(key: String, id: Int, registry: PendingStores) {
            self.key = key
            self.id = id
            self.registry = registry
        }

        deinit { registry.release(self) }

        /// Stores `entry` in `cache` unless the key was voided, and takes it out again if the key was voided while it
        /// was being stored (the voiding request's removal may have come first).
        func store(_ entry: CachedResponse, in cache: any ResponseCache) async {
            guard registry.claim(self) else { return }
            await cache.store(entry, for: key)
            if !registry.isLive(self) { await cache.removeCachedResponse(for: key) }
        }

        /// Removes the key's entry, which this ticket's answer makes out of date, unless the key was voided (by a
        /// newer answer, which may be the entry now).
        func remove(from cache: any ResponseCache) async {
            guard registry.claim(self) else { return }
            await cache.removeCachedResponse(for: key)
        }
    }
}
