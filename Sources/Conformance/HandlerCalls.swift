import Foundation
import Loader

/// The suite's direct calls into a handler's `startLoading()` and `stopLoading()`. Each runs on a thread of its own,
/// waited for by suspending, so that a handler that blocks in one fails a property instead of hanging the suite: past
/// ``patience`` its thread is left to it, no further call is made, and the suite stops checking (``stuck``).
final class HandlerCalls: Sendable {
    /// The longest `startLoading()` may take: the loader calls it on the caller's thread, which it holds up.
    static let longestStart: UInt64 = 1_000_000_000

    /// When a call began on its thread and how long it took (uptime nanoseconds).
    struct Timing: Sendable {
        let began: UInt64
        let took: UInt64
    }

    /// A call that had not returned within the patience.
    struct Stuck: Sendable {
        /// The property it breaks (``ConformanceProperty/startsPromptly`` or ``ConformanceProperty/stopsPromptly``).
        let property: ConformanceProperty
        let message: String
    }

    /// How long a call is waited for before the suite gives up on the handler.
    let patience: TimeInterval
    private let state = Locked<(slowestStart: (nanoseconds: UInt64, url: URL)?, stuck: Stuck?)>((nil, nil))

    init(patience: TimeInterval) {
        self.patience = patience
    }

    /// The call that never returned, if one did not.
    var stuck: Stuck? { state.withLock { $0.stuck } }

    /// `startLoading()`'s outcome over every call: whether each returned within ``longestStart``.
    var startOutcome: ConformanceReport.Outcome {
        guard let slowest = state.withLock({ $0.slowestStart }), slowest.nanoseconds > Self.longestStart else { return .passed }
        return .failed("startLoading() of \(slowest.url.absoluteString) took \(slowest.nanoseconds / 1_000_000) ms to return: the loader calls it on the caller's thread, which it holds up")
    }

    /// Calls `handler.startLoading()`; whether it returned (within the patience).
    func start(_ handler: SchemeHandler) async -> Bool {
        let url = handler.request.url
        guard let took = await call({ handler.startLoading() }, stuck: Stuck(property: .startsPromptly, message:
            "startLoading() of \(url.absoluteString) had not returned after \(Int(patience)) s: the caller's thread would wait for it for ever"))
        else { return false }
        state.withLock { state in
            if took.took > state.slowestStart?.nanoseconds ?? 0 { state.slowestStart = (took.took, url) }
        }
        return true
    }

    /// Calls `handler.stopLoading()`; when it began and how long it took, or `nil` if it had not returned within the
    /// patience.
    func stop(_ handler: SchemeHandler) async -> Timing? {
        await call({ handler.stopLoading() }, stuck: Stuck(property: .stopsPromptly, message:
            "stopLoading() of \(handler.request.url.absoluteString) had not returned after \(Int(patience)) s: a cancel would wait for it for ever"))
    }

    /// When `body` began on a thread of its own and how long it took (from the thread, not the caller: the hop to it
    /// is not the handler's time), or `nil` if it had not returned within the patience (then `stuck`
    /// is kept) or an earlier call never returned (then it is not made).
    private func call(_ body: @escaping @Sendable () -> Void, stuck: Stuck) async -> Timing? {
        guard self.stuck == nil else { return nil }
        let waiter = Locked<CheckedContinuation<Timing?, Never>?>(nil)
        let timer = Locked<Task<Void, Never>?>(nil)
        let took = await withCheckedContinuation { (continuation: CheckedContinuation<Timing?, Never>) in
            waiter.withLock { $0 = continuation }
            timer.withLock { [patience] in
                $0 = Task {
                    guard (try? await Task.sleep(for: .seconds(patience))) != nil else { return }
                    waiter.withLock { $0.take() }?.resume(returning: nil)
                }
            }
            Thread {
                let start = DispatchTime.now().uptimeNanoseconds
                body()
                let took = Timing(began: start, took: DispatchTime.now().uptimeNanoseconds - start)
                waiter.withLock { $0.take() }?.resume(returning: took)
                timer.withLock { $0 }?.cancel()
            }.start()
        }
        if took == nil { state.withLock { if $0.stuck == nil { $0.stuck = stuck } } }
        return took
    }
}
