import Synchronization

/// The allowance, shared by connections, for socket reads larger than ``ReadBufferGrant/base``.
///
/// Large reads make a fast download cheaper per byte (fewer reads, and a body chunk that fills most of its
/// buffer is handed on without a copy), but a connection keeps its read buffer between reads, at the largest
/// size it reached. A thousand downloads whose reads all fill their buffers would each keep a large one: with
/// 1 MiB reads and no allowance, 1,000 concurrent 256 KB/s downloads peaked at 299 MiB instead of 128 MiB.
/// So connections grow past `base` only with bytes taken from here (``ReadBufferGrant``).
final class ReadBufferBudget: Sendable {
    /// The process-wide allowance: sixteen connections reading at the ceiling.
    static let shared = ReadBufferBudget(bytes: 16 * (ReadBufferGrant.ceiling - ReadBufferGrant.base))

    private let left: Atomic<Int>

    /// An allowance of `bytes`.
    init(bytes: Int) {
        left = Atomic(bytes)
    }

    /// The bytes not taken.
    var available: Int { left.load(ordering: .relaxed) }

    /// Takes `bytes` if that many are left; false, and nothing taken, otherwise.
    func take(_ bytes: Int) -> Bool {
        var current = left.load(ordering: .relaxed)
        // Lock-free: each failed exchange means another connection took or gave back bytes meanwhile.
        while current >= bytes {
            let (exchanged, original) = left.compareExchange(expected: current, desired: current - bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Returns bytes taken earlier.
    func giveBack(_ bytes: Int) {
        left.add(bytes, ordering: .relaxed)
    }
}
