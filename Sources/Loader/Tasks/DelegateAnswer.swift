/// Waits for a delegate's async answer in a way a cancel can end: the delegate answers in a task of its own, and
/// the wait ends at the cancel even if the delegate goes on (a prompt nobody answers). As with URLSession, a task
/// cancelled during a challenge ends then, and a late answer is dropped. The cancel is the load task's
/// (``LoadTask/cancel()``) or the waiting Swift task's (the loader stops a handler so when its load times out).
package enum DelegateAnswer {
    private struct Wait<Answer: Sendable> {
        var waiter: CheckedContinuation<Answer?, Never>?
        var answering: Task<Void, Never>?
        var ended = false
    }

    /// `ask`'s answer, or `nil` when the wait was ended first. `register` gets the function that ends the wait
    /// (it cancels the answering task too), for whoever cancels to call, and says whether that has happened
    /// already (the wait then ends at once).
    package static func awaiting<Answer: Sendable>(_ ask: @escaping @Sendable () async -> Answer,
                                                   register: (_ end: @escaping @Sendable () -> Void) -> Bool) async -> Answer? {
        let wait = Locked(Wait<Answer>())
        let end: @Sendable () -> Void = {
            let (waiter, answering) = wait.withLock { wait in
                defer { wait.waiter = nil; wait.ended = true }
                return (wait.waiter, wait.answering)
            }
            answering?.cancel()
            waiter?.resume(returning: nil)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Answer?, Never>) in
                // Kept before the answer is asked for, which may come at once; an end that came first ends it here.
                let endedAlready = wait.withLock { wait -> Bool in
                    if !wait.ended { wait.waiter = waiter }
                    return wait.ended
                }
                guard !endedAlready else { return waiter.resume(returning: nil) }
                let answering = Task {
                    let answer = await ask()
                    wait.withLock { wait in
                        defer { wait.waiter = nil }
                        return wait.waiter
                    }?.resume(returning: answer)
                }
                if wait.withLock({ wait in wait.answering = answering; return wait.ended }) { answering.cancel() }
                if register(end) { end() }
            }
        } onCancel: {
            end()
        }
    }
}
