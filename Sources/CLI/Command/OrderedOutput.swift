import Loader

/// Standard output shared by transfers that run at once (`-Z`): each transfer's part of it (its body, when that goes
/// to standard output, then its `-w` line) comes out whole and in the order of the URLs, as it would one transfer
/// after another.
///
/// A transfer writing its body to standard output before its turn keeps it aside (``SpooledOutput``) and writes it
/// out at its ``turn(_:)``. A `-w` line of a transfer that finished early is kept here until its turn. Every transfer calls ``finish(_:with:)`` once, however
/// it ended, or the ones after it would wait for ever.
final class OrderedOutput: Sendable {
    private struct State {
        /// The transfer whose part comes out now.
        var current = 0
        /// Transfers after `current` that have finished, with the `-w` text they left.
        var finished: [Int: String] = [:]
        /// The transfer waiting for its turn, if any: only `current` can be let go, and each waits once.
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Whether the run was stopped (``silence()``).
        var silenced = false
    }

    private let state = Locked(State())
    private let write: @Sendable (String) -> Void

    /// - Parameter write: Where the kept `-w` text goes (standard output; a test's buffer).
    init(write: @escaping @Sendable (String) -> Void = StandardStreams.output) {
        self.write = write
    }

    /// Whether transfer `index` may write now: every one before it has written its part.
    func isTurn(_ index: Int) -> Bool {
        state.withLock { $0.current == index }
    }

    /// Whether transfer `index` is waiting for its turn (for tests).
    func isWaiting(_ index: Int) -> Bool {
        state.withLock { $0.waiting[index] != nil }
    }

    /// Whether the run was stopped: nothing more is written.
    var isSilenced: Bool { state.withLock { $0.silenced } }

    /// Stops the run's output (`--fail-early` with `-Z`, at the first failure): nothing more is written, not even what
    /// was kept for a later turn, and no turn is waited for any more, as curl drops what its aborted transfers had.
    func silence() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.silenced = true
            state.finished = [:]
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once every transfer before `index` has written its part (at once once silenced).
    func turn(_ index: Int) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.current == index || state.silenced { return true }
                state.waiting[index] = waiter
                return false
            }
            if now { waiter.resume() }
        }
    }

    /// Ends transfer `index`'s part with `text` (its `-w` line; empty for none): written now if it is its turn, else
    /// kept for then. Lets the next transfer waiting for its turn go on.
    func finish(_ index: Int, with text: String) {
        // Written under the lock: two finishing transfers' lines must not cross.
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.silenced else { return nil }
            guard state.current == index else {
                state.finished[index] = text
                return nil
            }
            if !text.isEmpty { write(text) }
            state.current += 1
            while let kept = state.finished.removeValue(forKey: state.current) {
                if !kept.isEmpty { write(kept) }
                state.current += 1
            }
            return state.waiting.removeValue(forKey: state.current)
        }
        next?.resume()
    }
}

/// One transfer's place in an ``OrderedOutput``: its turn among every transfer the command line runs at once, in
/// the order of the URLs, operation after operation (`--next`).
struct OutputTurn: Sendable {
    let output: OrderedOutput
    let position: Int

    /// Whether the transfer may write now.
    var isNow: Bool { output.isTurn(position) }

    /// Returns once every transfer before this one has written its part.
    func wait() async { await output.turn(position) }

    /// Whether the run was stopped (``OrderedOutput/silence()``): nothing more of the transfer is written.
    var isSilenced: Bool { output.isSilenced }

    /// Ends the transfer's part with `text` (``OrderedOutput/finish(_:with:)``).
    func finish(with text: String) { output.finish(position, with: text) }
}
