/// Waits for a delegate's async answer in a way a cancel can end: the delegate answers in a task of its own, and
/// the wait ends at the cancel even if the delegate goes on (a prompt nobody answers). As with URLSession, a task
/// cancelled during a challenge ends then, and a late answer is dropped.
package enum DelegateAnswer {
    /// `ask`'s answer, or `nil` when the wait was ended first. `register` gets the function that ends the wait
    /// (it cancels the answering task too), for whoever cancels to call, and says whether that has happened
    /// already (the wait then ends at once).
    package static func awaiting<Answer: Sendable>(_ ask: @escaping @Sendable () async -> Answer,
                                                   register: (_ end: @escaping @Sendable () -> Void) -> Bool) async -> Answer? {
        await withCheckedContinuation { (waiter: CheckedContinuation<Answer?, Never>) in
            let slot = Locked<CheckedContinuation<Answer?, Never>?>(waiter)
            let answering = Task {
                let answer = await ask()
                slot.withLock { $0.take() }?.resume(returning: answer)
            }
            let end: @Sendable () -> Void = {
                answering.cancel()
                slot.withLock { $0.take() }?.resume(returning: nil)
            }
            if register(end) { end() }
        }
    }
}
