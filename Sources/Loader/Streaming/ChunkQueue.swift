import DequeModule
import FoundationEssentials

/// The body chunks a load holds for its reader, first in, first out.
///
/// The first chunk is kept inline and only a second one spills into a `Deque`: a small body (one chunk) and
/// a stream whose reader keeps up (one chunk at a time) never allocate the deque's storage, which was one
/// allocation on every load.
struct ChunkQueue {
    private var first: Data?
    private var rest = Deque<Data>()

    var isEmpty: Bool { first == nil }

    mutating func append(_ chunk: Data) {
        if first == nil {
            first = chunk
        } else {
            rest.append(chunk)
        }
    }

    mutating func popFirst() -> Data? {
        guard let chunk = first.take() else { return nil }
        first = rest.popFirst()
        return chunk
    }

    mutating func removeAll() {
        first = nil
        rest.removeAll()
    }
}
