import FoundationEssentials
import Synchronization

/// Runs one handler instance: it is the handler's client, holds the body buffer, enforces the event
/// contract, the timeouts and cancellation, and stops the handler exactly once.
final class HandlerDriver: SchemeHandlerClient, Watchdog.Subject {
    /// The event state machine, with the handler and task beside it under the same lock: the handler is
    /// taken out in the same critical section that decides to stop it.
    private let guarded: Locked<Guarded>
    let url: URL
    private let idleTimeout: TimeInterval
    private let resourceDeadline: UInt64
    private let resourceTimeout: TimeInterval
    /// Whether any timeout is short enough to need the watchdog.
    private let isWatched: Bool
    /// Whether this load was handed to the watchdog (which is told when it stops).
    private let isWatching = Atomic<Bool>(false)
    /// Set, under the lock, once the head has come or the load has ended: ``awaitResult()`` reads it without
    /// the lock to know whether it must wait.
    private let headSettled = Atomic<Bool>(false)
    private let credentialStore: CredentialStore?
    /// Whether the task collects metrics (it has a delegate): every other load skips them with this one test.
    let collectsMetrics: Bool
    /// The place of this handler's transaction among the task's (``LoadTask/didCollect(_:)``), -1 before it reports one.
    private let transactionIndex = Atomic<Int>(-1)

    private struct Guarded {
        var events: HandlerEventState
        /// The handler and the task, kept until the handler has been stopped. Both refer back to this
        /// driver (as client, as the task's driver), so the references are dropped then to break the
        /// cycles; strong rather than weak, because weak references make every later retain and release of
        /// the object slower.
        var handler: SchemeHandler?
        var task: LoadTask?

        /// Takes the handler and the task out, for a stop: the handler to stop, if it was still here.
        mutating func detach() -> SchemeHandler? {
            defer { handler = nil; task = nil }
            return handler
        }
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
        self.guarded = Locked(Guarded(events: HandlerEventState(url: url, highWatermark: highWatermark), handler: nil, task: task))
        self.idleTimeout = idleTimeout
        // From the task's first handler, not this one's: a redirect or a retry does not restart the clock.
        self.resourceDeadline = (task?.resourceClockStart() ?? Watchdog.now()) &+ Self.nanoseconds(resourceTimeout)
        self.resourceTimeout = resourceTimeout
        self.isWatched = min(idleTimeout, resourceTimeout) < Self.noTimeout
        self.credentialStore = credentialStore
        self.collectsMetrics = task?.collectsMetrics ?? false
    }

    /// Contract violations seen so far, for diagnostics and the conformance suite.
    var violations: [String] { guarded.withLock { $0.events.violations } }

    /// Whether the load has ended (a terminal event from the handler, or a failure from the loader's side).
    var hasTerminated: Bool { guarded.withLock { $0.events.isTerminated } }

    // MARK: Starting and stopping

    /// Instantiates nothing: the registry made `handler` with this driver as its client. Starts it.
    func start(_ handler: SchemeHandler) {
        let starts = guarded.withLock { guarded -> Bool in
            guard guarded.events.willStart() else {
                guarded.task = nil
                return false
            }
            guarded.handler = handler
            return true
        }
        guard starts else { return }
        handler.startLoading()
        let (stopping, ended) = guarded.withLock { guarded in
            (guarded.events.didStart() ? guarded.detach() : nil, guarded.events.isTerminated)
        }
        // Watched only once started, and only if still running: a load that ended in its first step (data:,
        // a no-op) spares the watchdog's process-wide lock twice. The deadlines date from init, so a load still
        // running is judged as before; a stop that slips in before the watch leaves an entry the next tick
        // drops. What is no longer timed is a first step that blocks its thread, which handlers must not do
        // (SchemeHandler's threading contract): one that did and then finished is not failed for it.
        if isWatched, !ended {
            isWatching.store(true, ordering: .releasing)
            Watchdog.shared.watch(self)
        }
        if let stopping { stop(stopping) }
    }

    /// Ends the load from the loader's side with `error` (cancellation, timeout, reader gone).
    func cancel(with error: LoadError) {
        update { $0.cancel(with: error) }
    }

    /// Stops `handler`, which ``Guarded/detach()`` took out: once per load.
    private func stop(_ handler: SchemeHandler) {
        if isWatching.load(ordering: .acquiring) { Watchdog.shared.unwatch(self) }
        handler.stopLoading()
    }

    // MARK: Reading

    /// Waits for the response head and returns it with its body; throws the load's error if it fails first.
    ///
    /// A load that has finished by then with its body in one chunk (most small responses: the handler
    /// reports head, body and end at once) hands the body over as plain data, so that reading it needs
    /// neither this driver nor a guard against a body dropped unread.
    ///
    /// Its own cancellation handler, although the session's entry points forward cancellation to the
    /// ``LoadTask`` too: a middleware may call `next` from a task of its own (a race, a background
    /// revalidation) and cancel that task.
    func awaitResult() async throws -> LoadResult {
        // A handler that answers in its first step (data:, a no-op, a cache) has the head here already: no
        // cancellation handler and no continuation, which cost more than the rest of this read. A task
        // cancelled already takes the long way, whose handler cancels the load before the head is read.
        if Task.isCancelled || !headSettled.load(ordering: .acquiring) { await waitForResponse() }
        // Returned straight from a plain function: a result held here would be part of the async frame.
        return try takeResult()
    }

    /// Waits until the head has come or the load has ended without one. The continuation carries nothing:
    /// this frame, and the caller's, are allocated on every load that waits, and a head or an error in them
    /// made each several hundred bytes larger.
    private func waitForResponse() async {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (waiter: UnsafeContinuation<Void, Never>) in
                update { $0.awaitResponse(waiter) }
            }
        } onCancel: {
            self.cancel(with: LoadError(.cancelled, url: url))
        }
    }

    /// The head and its body; the load's error if it ended without a head. Out of line, so that its
    /// temporaries stay on the thread's stack, not in the async frame.
    @inline(never)
    private func takeResult() throws -> LoadResult {
        let (outcome, whole) = guarded.withLock { guarded in
            let outcome = guarded.events.takeResponse()
            guard case .success? = outcome else { return (outcome, Data?.none) }
            return (outcome, guarded.events.takeWholeBody())
        }
        guard let outcome else { throw LoadError(.unknown, url: url, reason: "the load ended without a response") }
        let (response, redirect) = try outcome.get()
        return result(response, redirect: redirect, whole: whole)
    }

    private func result(_ response: LoadResponse, redirect: LoadRequest?, whole: Data?) -> LoadResult {
        let body = whole.map { ResponseBody(data: $0) } ?? ResponseBody(driver: self)
        return LoadResult(response: response, body: body, redirectRequest: redirect)
    }

    /// The next body chunk, or `nil` at the end of the body.
    func nextChunk() async throws -> Data? {
        var effects = HandlerEventState.Effects()
        let (polled, stopping) = guarded.withLock { guarded in
            let polled = guarded.events.poll(&effects)
            let stopping = effects.stopHandler ? guarded.detach() : nil
            return (polled, stopping)
        }
        perform(effects, stopping: stopping)
        switch polled {
        case .chunk(let data): return data
        case .end: return nil
        case .failure(let error): throw error
        case .empty: break
        }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { waiter in
                update { $0.awaitChunk(waiter) }
            }
        } onCancel: {
            self.cancel(with: LoadError(.cancelled, url: url))
        }
    }

    // MARK: SchemeHandlerClient

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) {
        update { $0.receiveResponse(response, redirect: nil) }
    }

    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) {
        update { $0.receiveResponse(response, redirect: request) }
    }

    func handler(_ handler: SchemeHandler, didLoad data: Data) {
        update { $0.receiveData(data) }
    }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: Data, finished: Bool) {
        // The body is taken below, with the end: counted here, before the end's event.
        if finished, collectsMetrics { transactionEnded(taking: Int64(body.count)) }
        // All under one lock, the waiting reader resumed after: it wakes once and finds everything there.
        update { state in
            var effects = state.receiveResponse(response, redirect: nil)
            if !body.isEmpty { effects.merge(state.receiveData(body)) }
            if finished { effects.merge(state.receiveFinish()) }
            return effects
        }
    }

    func handler(_ handler: SchemeHandler, deliver data: Data) async throws {
        var full = false
        update { state in
            let effects = state.receiveData(data)
            full = !state.hasRoom
            return effects
        }
        if let error = terminalError() { throw error }
        guard full else { return }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (waiter: UnsafeContinuation<Void, any Error>) in
                update { $0.awaitRoom(waiter) }
            }
        } onCancel: {
            self.cancel(with: LoadError(.cancelled, url: url))
        }
    }

    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) {
        if guarded.withLock({ $0.events.whenRoom(callback) }) { callback() }
    }

    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        // Sending is progress: a long upload is not idle while its bytes go out (the request timeout is an idle one).
        let task = guarded.withLock { guarded in
            guarded.events.noteUploadProgress()
            return guarded.task
        }
        task?.didSend(total: totalBytesSent, expected: totalBytesExpectedToSend)
    }

    func handlerDidFinishLoading(_ handler: SchemeHandler) {
        if collectsMetrics { transactionEnded() }
        update { $0.receiveFinish() }
    }

    func handler(_ handler: SchemeHandler, didCollect transaction: LoadTransactionMetrics) {
        // The task from the lock, not a reference of this driver's own: it is let go with the handler (a cycle).
        guard collectsMetrics, let task = guarded.withLock({ $0.task }) else { return }
        transactionIndex.store(task.didCollect(transaction), ordering: .releasing)
    }

    /// Notes the end of this handler's transaction, if it reported one: before the end's event, which may complete
    /// the task and hand its metrics on.
    /// `taking`: body bytes that come with the end, not yet taken.
    private func transactionEnded(taking more: Int64 = 0) {
        let index = transactionIndex.load(ordering: .acquiring)
        guard index >= 0, let (task, received) = guarded.withLock({ guarded in guarded.task.map { ($0, guarded.events.receivedBytes) } }) else {
            return
        }
        task.transactionEnded(index, bodyBytes: received + more)
    }

    func handler(_ handler: SchemeHandler, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        guard let task = guarded.withLock({ $0.task }) else { return .cancelAuthenticationChallenge }
        // A task cancelled while its delegates answer refuses the challenge; the cancel ends the load anyway.
        guard let answer = try? await task.didReceive(challenge) else { return .cancelAuthenticationChallenge }
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
        if collectsMetrics { transactionEnded() }
        update { $0.receiveFailure(error) }
    }

    // MARK: Effects

    private func terminalError() -> LoadError? {
        guarded.withLock { guarded in
            if case .failed(let error)? = guarded.events.terminal { return error }
            return nil
        }
    }

    /// Applies `body` to the state machine and carries out its effects after the lock, taking the
    /// handler out under the lock if they include stopping it.
    private func update(_ body: (inout HandlerEventState) -> HandlerEventState.Effects) {
        let (effects, stopping) = guarded.withLock { guarded in
            let effects = body(&guarded.events)
            if guarded.events.hasResponseOrEnd { headSettled.store(true, ordering: .releasing) }
            // Decided first, so that the effects are moved into the result rather than copied.
            let stopping = effects.stopHandler ? guarded.detach() : nil
            return (effects, stopping)
        }
        perform(effects, stopping: stopping)
    }

    private func perform(_ effects: consuming HandlerEventState.Effects, stopping: SchemeHandler?) {
        effects.response.take()?.resume()
        // Taken out and switched on, not mapped: `mapError` copied the result on every chunk.
        if let (waiter, result) = effects.consumer.take() {
            switch consume result {
            case .success(let value): waiter.resume(returning: value)
            case .failure(let error): waiter.resume(throwing: error)
            }
        }
        for waiter in effects.producers {
            if let error = effects.producerError { waiter.resume(throwing: error) } else { waiter.resume() }
        }
        for callback in effects.readyCallbacks { callback() }
        if let stopping { stop(stopping) }
    }

    // MARK: Timeouts

    /// Checks the idle and resource timeouts; one timer per load, re-armed only when it fires.
    /// Fails the load if it went idle too long or passed its resource deadline; `false` once it has ended.
    /// A suspended task is not judged (as URLSession's is not subject to timeouts): its time suspended moves the
    /// resource deadline back, and its idleness counts from its last resume.
    func checkTimeouts(now: UInt64) -> Bool {
        // Read apart from this driver's lock: the task's lock is never taken inside it.
        let pause = guarded.withLock { $0.task }?.pause ?? LoadTask.Pause()
        if pause.since != nil { return !hasTerminated }
        let error = guarded.withLock { guarded -> LoadError? in
            guard !guarded.events.isTerminated else { return nil }
            if now >= resourceDeadline &+ pause.total {
                return LoadError(.timedOut, url: url, reason: "the load took longer than its resource timeout, \(Self.format(resourceTimeout)) s")
            }
            // A full buffer waits for the reader, not for the handler: that is not idleness.
            // Activity may be newer than `now` (recorded since it was read): then the load is not idle.
            let lastActivity = max(guarded.events.lastActivity, pause.endedAt)
            let idle = lastActivity >= now ? 0 : now - lastActivity
            if Self.seconds(idle) >= idleTimeout, !guarded.events.isWaitingForConsumer {
                return LoadError(.timedOut, url: url, reason: "no progress for \(Self.format(idleTimeout)) s (the request timeout)")
            }
            return nil
        }
        if let error { cancel(with: error) }
        return error == nil && !hasTerminated
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
