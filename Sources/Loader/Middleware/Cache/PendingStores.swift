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
        /// The tickets a newer one's store made out of date, by key, until they are released: told apart from those an
        /// unsafe request voided, after whose store the entry must go again.
        var superseded: [String: Set<Int>] = [:]
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

    /// Voids every pending store under `key`: an unsafe request changed what it names.
    func void(_ key: String) {
        state.withLock { state in
            state.live.removeValue(forKey: key)
            state.superseded.removeValue(forKey: key)
        }
    }

    /// Whether `ticket` is live; if it is, marks the tickets taken before it under its key as superseded: their answers
    /// are older.
    fileprivate func claim(_ ticket: Ticket) -> Bool {
        state.withLock { state in
            guard let ids = state.live[ticket.key], ids.contains(ticket.id) else { return false }
            let older = ids.filter { $0 < ticket.id }
            guard !older.isEmpty else { return true }
            state.live[ticket.key] = ids.subtracting(older)
            state.superseded[ticket.key, default: []].formUnion(older)
            return true
        }
    }

    /// Where `ticket` stands now.
    fileprivate enum Standing { case live, superseded, voided }

    fileprivate func standing(_ ticket: Ticket) -> Standing {
        state.withLock { state in
            if state.live[ticket.key]?.contains(ticket.id) ?? false { return .live }
            return state.superseded[ticket.key]?.contains(ticket.id) ?? false ? .superseded : .voided
        }
    }

    fileprivate func release(_ ticket: Ticket) {
        state.withLock { state in
            if var ids = state.live[ticket.key], ids.remove(ticket.id) != nil { state.live[ticket.key] = ids.isEmpty ? nil : ids }
            if var ids = state.superseded[ticket.key], ids.remove(ticket.id) != nil {
                state.superseded[ticket.key] = ids.isEmpty ? nil : ids
            }
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

        /// Stores `entry` in `cache` unless the key was voided or a newer answer was stored. If an unsafe request voided
        /// the key while it was being stored (its removal may have come first), the entry goes again; if a newer answer
        /// was stored meanwhile, this one goes only if its write came last and it is what the cache holds.
        func store(_ entry: CachedResponse, in cache: any ResponseCache) async {
            guard registry.claim(self) else { return }
            await cache.store(entry, for: key)
            switch registry.standing(self) {
            case .live:
                return
            case .voided:
                await cache.removeCachedResponse(for: key)
            case .superseded:
                if let held = await cache.cachedResponse(for: key), held.requestedAt == entry.requestedAt, held.storedAt == entry.storedAt {
                    await cache.removeCachedResponse(for: key)
                }
            }
        }

        /// Removes the key's entry, which this ticket's answer makes out of date, unless the key was voided (by a
        /// newer answer, which may be the entry now).
        func remove(from cache: any ResponseCache) async {
            guard registry.claim(self) else { return }
            await cache.removeCachedResponse(for: key)
        }
    }
}
