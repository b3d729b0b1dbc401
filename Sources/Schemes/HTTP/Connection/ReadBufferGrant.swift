import Synchronization

/// A connection's share of a ``ReadBufferBudget``: how far past ``base`` its reads may grow.
///
/// Bytes are given back when the connection is gone, not when its reads shrink: NIO keeps the connection's
/// read buffer at the largest size it reached.
final class ReadBufferGrant: Sendable {
    /// The read size every connection may reach without a grant: NIO's default largest read.
    static let base = 64 * 1024
    /// The largest read a connection may grow to with a grant.
    static let ceiling = 1024 * 1024

    private let budget: ReadBufferBudget
    /// Bytes above `base` this grant holds. Changed only on the connection's event loop; atomic because
    /// the grant, like the channel option that holds it, must be `Sendable`.
    private let extra = Atomic<Int>(0)

    /// A grant of nothing yet, taking from `budget`.
    init(from budget: ReadBufferBudget = .shared) {
        self.budget = budget
    }

    /// The largest read size allowed now.
    var limit: Int { Self.base + extra.load(ordering: .relaxed) }

    /// Takes from the budget what reads of `size` bytes need beyond what is held already; false, and nothing
    /// taken, when the budget has not that much left.
    func raise(to size: Int) -> Bool {
        let more = size - limit
        guard more > 0 else { return true }
        guard budget.take(more) else { return false }
        extra.add(more, ordering: .relaxed)
        return true
    }

    deinit {
        budget.giveBack(extra.load(ordering: .relaxed))
    }
}
