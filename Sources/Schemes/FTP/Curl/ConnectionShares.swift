/// Which kept FTP control connections go together, in which libcurl share handle, and since when each share has
/// been idle: a plain value, so the rules are tested without libcurl. The engine makes and frees the handles
/// (`Handle`); this only says when.
///
/// One share per session and TLS settings (`Key`), as the HTTP pool keeps one set of connections per session:
/// a connection logged in for one session's load is never lent to another session, and one made under weaker
/// TLS settings (not verified, TLS only if offered) never serves a load that asks for more (libcurl 7.88
/// compares those settings for `ftps:` only). Within a share libcurl reuses a connection only for the same
/// server and login.
struct ConnectionShares<Key: Hashable, Handle> {
    private struct Entry {
        var handle: Handle
        /// Transfers using the handle now; it may be freed only at zero (libcurl refuses while in use).
        var running: Int
        /// When the last transfer using it ended (monotonic nanoseconds).
        var idleSince: UInt64
        /// How long its connections may stay idle: the latest transfer's setting, or 0 once its session ended.
        var idleTimeout: UInt64
        /// Whether its session ended (``expireSoon(where:)``): a late transfer does not restore the timeout.
        var ended = false
    }

    private var entries: [Key: Entry] = [:]

    /// Whether no session keeps connections.
    var isEmpty: Bool { entries.isEmpty }

    /// The share for `key`, counted as in use until ``release(_:now:)``: the one it has, or a new one
    /// from `make` (`nil` if that fails: the transfer then takes a connection of its own).
    mutating func acquire(_ key: Key, idleTimeout: UInt64, make: () -> Handle?) -> Handle? {
        if var entry = entries[key] {
            entry.running += 1
            if !entry.ended { entry.idleTimeout = idleTimeout }
            entries[key] = entry
            return entry.handle
        }
        guard let handle = make() else { return nil }
        entries[key] = Entry(handle: handle, running: 1, idleSince: 0, idleTimeout: idleTimeout)
        return handle
    }

    /// A transfer that used the share of `key` has ended (its handle is freed).
    mutating func release(_ key: Key, now: UInt64) {
        guard var entry = entries[key], entry.running > 0 else { return }
        entry.running -= 1
        if entry.running == 0 { entry.idleSince = now }
        entries[key] = entry
    }

    /// Makes the shares whose key matches (their session has ended) expire as soon as no transfer uses them.
    mutating func expireSoon(where matches: (Key) -> Bool) {
        for (key, var entry) in entries where matches(key) {
            entry.idleTimeout = 0
            entry.ended = true
            entries[key] = entry
        }
    }

    /// When the first idle share's timeout runs out (monotonic nanoseconds), or `nil` while none is idle.
    var nextExpiry: UInt64? {
        entries.values.lazy.filter { $0.running == 0 }.map { $0.idleSince.addingReportingOverflow($0.idleTimeout).partialValue }.min()
    }

    /// Takes out the shares that nothing has used for their idle timeout, for the caller to free (which closes
    /// their connections).
    mutating func takeExpired(now: UInt64) -> [Handle] {
        var expired: [Handle] = []
        for (key, entry) in entries where entry.running == 0 && now - min(now, entry.idleSince) >= entry.idleTimeout {
            expired.append(entry.handle)
            entries[key] = nil
        }
        return expired
    }
}
