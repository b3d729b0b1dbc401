import DequeModule
import FoundationEssentials

/// Body chunks held in order, first in, first out: a load's buffer for its reader, and the HTTP handler's
/// batch of one socket read.
///
/// The first chunk is kept inline and only a second one spills into a `Deque`: a small body (one chunk) and
/// a stream whose reader keeps up (one chunk at a time) never allocate the deque's storage, which was one
/// allocation on every load.
package struct ChunkQueue: Sendable {
    private var first: Data?
    private var rest = Deque<Data>()

    /// An empty queue.
    package init() {}

    /// Whether no chunk is held.
    package var isEmpty: Bool { first == nil }

    /// Whether at most one chunk is held.
    package var holdsOneAtMost: Bool { rest.isEmpty }

    /// Adds `chunk` after the others.
    package mutating func append(_ chunk: Data) {
        if first == nil {
            first = chunk
        } else {
            rest.append(chunk)
        }
    }

    /// Takes out the oldest chunk, if any.
    package mutating func popFirst() -> Data? {
        guard let chunk = first.take() else { return nil }
        first = rest.popFirst()
        return chunk
    }

    /// Drops every chunk.
    package mutating func removeAll() {
        first = nil
        rest.removeAll()
    }

    /// Calls `body` with each chunk, oldest first.
    package func forEach(_ body: (Data) -> Void) {
        guard let first else { return }
        body(first)
        for chunk in rest { body(chunk) }
    }

    /// The chunks as one: the only one as it is, several joined into a copy.
    package var joined: Data {
        guard var whole = first else { return Data() }
        if rest.isEmpty { return whole }
        whole.reserveCapacity(rest.reduce(whole.count) { $0 + $1.count })
        for chunk in rest { whole.append(chunk) }
        return whole
    }
}
