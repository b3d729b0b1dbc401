import DequeModule

/// A task's delegate calls, one at a time and in the order their events happened, as ``LoadTaskDelegate``
/// promises, with no lock held while a delegate runs.
///
/// Whoever adds a call to an idle queue delivers it, and any added meanwhile, on its own thread (a handler's thread
/// leaves that to a Swift task: an event loop runs no app code); whoever adds one while another thread delivers leaves
/// it to that thread and goes on. So a caller never waits for a delegate running elsewhere: ``LoadTask/cancel()`` from
/// a thread that holds the app's lock returns, where a lock around each call made it wait for a delegate that waited
/// for that lock. A delegate that calls into its task (cancels it) hears of what that caused after its call returns,
/// not inside it. The reader, whose next step depends on what the delegates did (suspended or cancelled the task),
/// awaits ``delivered()`` after each event it reports.
final class DelegateQueue: Sendable {
    private struct State {
        var calls = Deque<@Sendable () -> Void>()
        /// Whether a thread is delivering.
        var delivering = false
        /// Whether the completion is queued: later progress and data calls are dropped (nothing follows it).
        var ended = false
        /// Readers waiting until every call queued has been delivered (``delivered()``).
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Queues `call`, delivering it now unless another thread is delivering. `droppedAfterEnd`: a call dropped when
    /// the completion is queued already (a chunk a reader handed on as a cancel completed the task); `ends`: the
    /// completion; `elsewhere`: from a handler's thread, which does not deliver (a Swift task does).
    func add(droppedAfterEnd: Bool = false, ends: Bool = false, elsewhere: Bool = false, _ call: @escaping @Sendable () -> Void) {
        let deliverHere = state.withLock { s -> Bool in
            if droppedAfterEnd, s.ended { return false }
            if ends { s.ended = true }
            s.calls.append(call)
            guard !s.delivering else { return false }
            s.delivering = true
            return true
        }
        guard deliverHere else { return }
        if elsewhere {
            Task.detached { self.deliver() }
        } else {
            deliver()
        }
    }

    /// Delivers the queued calls, and those added meanwhile, until none is left.
    private func deliver() {
        // Bounded by what the delegates add while they run: each of their calls into the task adds at most a few.
        while true {
            let (next, waiters) = state.withLock { s -> ((@Sendable () -> Void)?, [CheckedContinuation<Void, Never>]) in
                if let call = s.calls.popFirst() { return (call, []) }
                s.delivering = false
                defer { s.waiters = [] }
                return (nil, s.waiters)
            }
            guard let next else {
                waiters.forEach { $0.resume() }
                return
            }
            next()
        }
    }

    /// Returns once the queue is empty: every call queued so far delivered, and any added meanwhile (at once when none
    /// is pending), so that an async load returns after its delegates heard its end, as URLSession's does.
    func delivered() async {
        guard state.withLock({ $0.delivering || !$0.calls.isEmpty }) else { return }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                guard s.delivering || !s.calls.isEmpty else { return true }
                s.waiters.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }
}
