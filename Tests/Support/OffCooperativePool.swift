import Foundation

/// Runs synchronous, blocking or CPU-heavy test work on a thread of its own and awaits its result.
///
/// Not on Swift's cooperative pool, and not on `DispatchQueue.global()` either: on Linux both are the same
/// dispatch root queue, as wide as the machine has cores (two here). Work held there for seconds (a child
/// process waited for, a pipe read to its end, 15 MB of base64) stalled every other suite's loads while their
/// request timeouts, counted on a thread of their own, ran out. Assert on the result in the test, not in
/// `body`: the thread is outside the test's task.
public func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
