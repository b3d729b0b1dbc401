import FoundationEssentials
import Synchronization

/// Runs one handler instance: it is the handler's client, holds the body buffer, enforces the event
/// contract, the timeouts and cancellation, and stops the handler exactly once.
final class HandlerDriver: SchemeHandlerClient, Watchdog.Subject {
    private let state: Locked<HandlerEventState>
    /// The handler and the task, kept until the handler has been stopped. Both refer back to this driver
    /// (as client, as the task's driver), so the references are dropped then to break the cycles; strong
    /// rather than weak, because weak references make every later retain and release of the object slower.
    private let attached: Locked<Attached>
    let url: URL
    private let idleTimeout: TimeInterval
    private let resourceDeadline: UInt64
    /// Whether any timeout is short enough to need the watchdog.
    private let isWatched: Bool
    private let credentialStore: CredentialStore?

    private struct Attached {
        var handler: SchemeHandler?
        var task: LoadTask?
    }

    init(
        url: URL,
        highWatermark: Int,
        idleTimeout: TimeInterval,
        resourceTimeout: TimeInterval,
        task: LoadTask?,
        credentialStore: CredentialStore?
    ) {
        self.url = url
        self.state = Locked(HandlerEventState(url: url, highWatermark: highWatermark))
        self.idleTimeout = idleTimeout
        self.resourceDeadline = Watchdog.now() &+ Self.nanoseconds(resourceTimeout)
        self.isWatched = min(idleTimeout, resourceTimeout) < Self.noTimeout
        self.attached = Locked(Attached(handler: nil, task: task))
        self.credentialStore = credentialStore
    }

    /// Contract violations seen so far, for diagnostics and the conformance suite.
    var violations: [String] { state.withLock { $0.violations } }

    // MARK: Starting and stopping

    /// Instantiates nothing: the registry made `handler` with this driver as its client. Starts it.
    func start(_ handler: SchemeHandler) {
        attached.withLock { $0.handler = handler }
        guard state.withLock({ $0.willStart() }) else {
            attached.withLock { $0 = Attached() }
            return
        }
        if isWatched { Watchdog.shared.watch(self) }
        handler.startLoading()
        if state.withLock({ $0.didStart() }) { stopHandler() }
    }

    /// Ends the load from the loader's side with `error` (cancellation, timeout, reader gone).
    func cancel(with error: LoadError) {
        let effects = state.withLock { $0.cancel(with: error) }
        perform(effects)
    }

    private func stopHandler() {
        let handler = attached.withLock { attached -> SchemeHandler? in
            defer { attached = Attached() }
            return attached.handler
        }
        Watchdog.shared.unwatch(self)
        handler?.stopLoading()
    }

    // MARK: Reading

    /// Waits for the response head; throws the load's error if it fails first.
    ///
    /// Its own cancellation handler, although the session's entry points forward cancellation to the
    /// ``LoadTask`` too: a middleware may call `next` from a task of its own (a race, a background
    /// revalidation) and cancel that task.
    func awaitResponse() async throws -> (LoadResponse, LoadRequest?) {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { waiter in
                perform(state.withLock { $0.awaitResponse(waiter) })
            }
        } onCancel: {
            self.cancel(with: LoadError(.cancelled, url: url))
        }
    }

    /// The next body chunk, or `nil` at the end of the body.
    func nextChunk() async throws -> Data? {
        var effects = HandlerEventState.Effects()
        let polled = state.withLock { $0.poll(&effects) }
        perform(effects)
        switch polled {
        case .chunk(let data): return data
        case .end: return nil
        case .failure(let error): throw error
        case .empty: break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { waiter in
                perform(state.withLock { $0.awaitChunk(waiter) })
            }
        } onCancel: {
            self.cancel(with: LoadError(.cancelled, url: url))
        }
    }

    // MARK: SchemeHandlerClient

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) {
        perform(state.withLock { $0.receiveResponse(response, redirect: nil) })
    }

    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) {
        perform(state.withLock { $0.receiveResponse(response, redirect: request) })
    }

    func handler(_ handler: SchemeHandler, didLoad data: Data) {
        perform(state.withLock { $0.receiveData(data) })
    }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: [Data], finished: Bool) {
        // All under one lock, the waiting reader resumed after: it wakes once and finds everything there.
        let effects = state.withLock { state in
            var effects = state.receiveResponse(response, redirect: nil)
            for chunk in body where !chunk.isEmpty { effects.merge(state.receiveData(chunk)) }
            if finished { effects.merge(state.receiveFinish()) }
            return effects
        }
        perform(effects)
    }

    func handler(_ handler: SchemeHandler, deliver data: Data) async throws {
        let (effects, full) = state.withLock { state -> (HandlerEventState.Effects, Bool) in
            let effects = state.receiveData(data)
            return (effects, !state.hasRoom)
        }
        perform(effects)
        if let error = terminalError() { throw error }
        guard full else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                perform(state.withLock { $0.awaitRoom(waiter) })
            }
        } onCancel: {
            self.cancel(with: LoadError(.cancelled, url: url))
        }
    }

    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) {
        perform(state.withLock { $0.whenRoom(callback) })
    }

    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        attached.withLock { $0.task }?.didSend(total: totalBytesSent, expected: totalBytesExpectedToSend)
    }

    func handlerDidFinishLoading(_ handler: SchemeHandler) {
        perform(state.withLock { $0.receiveFinish() })
    }

    func handler(_ handler: SchemeHandler, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        guard let task = attached.withLock({ $0.task }) else { return .cancelAuthenticationChallenge }
        let answer = await task.didReceive(challenge)
        // Default handling of a handler's login question (FTP): the session's credential store, once.
        if case .performDefaultHandling = answer, challenge.serverTrust == nil, challenge.previousFailureCount == 0,
           let credential = credentialStore?.credential(for: challenge.protectionSpace) {
            return .useCredential(credential)
        }
        return answer
    }

    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) {
        var error = error
        if error.url == nil { error.url = url }
        perform(state.withLock { $0.receiveFailure(error) })
    }

    // MARK: Effects

    private func terminalError() -> LoadError? {
        state.withLock { state in
            if case .failed(let error)? = state.terminal { return error }
            return nil
        }
    }

    private func perform(_ effects: HandlerEventState.Effects) {
        if let (waiter, result) = effects.response { waiter.resume(with: result.mapError { $0 as any Error }) }
        if let (waiter, result) = effects.consumer { waiter.resume(with: result.mapError { $0 as any Error }) }
        for waiter in effects.producers {
            if let error = effects.producerError { waiter.resume(throwing: error) } else { waiter.resume() }
        }
        for callback in effects.readyCallbacks { callback() }
        if effects.stopHandler { stopHandler() }
    }

    // MARK: Timeouts

    /// Checks the idle and resource timeouts; one timer per load, re-armed only when it fires.
    /// Fails the load if it went idle too long or passed its resource deadline; `false` once it has ended.
    func checkTimeouts(now: UInt64) -> Bool {
        let error = state.withLock { state -> LoadError? in
            guard !state.isTerminated else { return nil }
            if now >= resourceDeadline {
                return LoadError(.timedOut, url: url, reason: "the resource timeout passed")
            }
            // A full buffer waits for the reader, not for the handler: that is not idleness.
            // Activity may be newer than `now` (recorded since it was read): then the load is not idle.
            let idle = state.lastActivity >= now ? 0 : now - state.lastActivity
            if Self.seconds(idle) >= idleTimeout, !state.isWaitingForConsumer {
                return LoadError(.timedOut, url: url, reason: "no progress for \(Self.format(idleTimeout)) s (the request timeout)")
            }
            return nil
        }
        if let error { cancel(with: error) }
        return error == nil && !state.withLock { $0.isTerminated }
    }

    /// Timeouts this long (about 31 years) or longer mean none.
    private static let noTimeout: TimeInterval = 1e9

    private static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
        seconds >= noTimeout ? UInt64.max / 2 : UInt64(max(0, seconds) * 1e9)
    }

    private static func seconds(_ nanoseconds: UInt64) -> TimeInterval { TimeInterval(nanoseconds) / 1e9 }

    private static func format(_ seconds: TimeInterval) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : seconds.printed("%.3g")
    }
}
