import FoundationEssentials
import Synchronization

/// The `Basic` credentials a session's servers accepted, by server and directory, so that later requests
/// below the same directory send theirs at once instead of waiting for a 401, as URLSession and curl's `-u`
/// do: one round trip per request instead of two. RFC 7617 §2.2 lets a client assume that a challenged
/// URL's protection space covers every path at or below its last `/`.
///
/// `Digest` answers are not kept: each needs a fresh client nonce and a counted use of the server's nonce, so
/// the answer sent ahead could not be worked out the same way twice (the middleware chain may ask for a
/// layer's request again).
final class AuthenticationCache: Sendable {
    /// A credential a server accepted, as the `Authorization` value that carries it.
    struct Entry: Sendable {
        /// The server (scheme, host, port) and the realm it named.
        var space: ProtectionSpace
        /// The accepted request's path (percent-encoded) up to and including its last `/`.
        var directory: String
        /// The `Authorization` value, worked out once.
        var authorization: String
        /// The credential, when it came from the session's credential store: it goes unasked only while the store
        /// holds it still.
        var storeHeld: Credential?
    }

    /// Servers an app talks to are few; past this many, the oldest entry goes.
    static let capacity = 64

    private let entries = Locked<[Entry]>([])
    /// Read without the lock on every load: most sessions never keep a credential.
    private let isEmpty = Atomic<Bool>(true)

    /// The kept entry for `url`: its server's, with the longest directory that holds the URL's path; `nil`
    /// when there is none, or when the URL carries user info of its own (that goes first, when challenged).
    func entry(for url: URL) -> Entry? {
        guard !isEmpty.load(ordering: .relaxed), url.user(percentEncoded: true) == nil else { return nil }
        return entries.withLock { entries in Self.index(for: url, in: entries).map { entries[$0] } }
    }

    /// Where in `entries` the entry for `url` is (see ``entry(for:)``).
    private static func index(for url: URL, in entries: [Entry]) -> Int? {
        let path = path(of: url)
        return entries.indices.lazy.filter { entries[$0].space.isServer(of: url) && path.hasPrefix(entries[$0].directory) }
            .max { entries[$0].directory.utf8.count < entries[$1].directory.utf8.count }
    }

    /// Keeps `authorization`, a credential the server of `space` accepted for `url`, for `url`'s directory and below;
    /// `storeHeld` is the credential when it came from the credential store.
    func remember(_ authorization: String, space: ProtectionSpace, url: URL, storeHeld: Credential? = nil) {
        let entry = Entry(space: space, directory: Self.directory(of: url), authorization: authorization, storeHeld: storeHeld)
        entries.withLock { entries in
            entries.removeAll { $0.directory == entry.directory && $0.space.isServer(of: url) }
            if entries.count >= Self.capacity { entries.removeFirst() }
            entries.append(entry)
            isEmpty.store(false, ordering: .relaxed)
        }
    }

    /// Drops the entry ``entry(for:)`` gives for `url` (its server refused the credential, or the store no longer
    /// holds it), if any; given `authorization`, only if the entry still carries it (no other load replaced it).
    func forget(for url: URL, authorization: String? = nil) {
        entries.withLock { entries in
            guard let index = Self.index(for: url, in: entries),
                  authorization.map({ entries[index].authorization == $0 }) ?? true else { return }
            entries.remove(at: index)
            isEmpty.store(entries.isEmpty, ordering: .relaxed)
        }
    }

    private static func path(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        return path.isEmpty ? "/" : path
    }

    /// `url`'s path up to and including its last `/`.
    static func directory(of url: URL) -> String {
        let path = path(of: url)
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "/" }
        return String(path[...slash])
    }
}
