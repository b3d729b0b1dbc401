import FoundationEssentials
import Synchronization

/// One load: its state, progress, response, error, and the means to suspend, resume and cancel it.
///
/// The async methods of ``LoaderSession`` make a task, run it in the caller's task and return its result;
/// the completion-handler methods return a suspended task that starts on ``resume()``.
public final class LoadTask: Sendable, CustomStringConvertible {
    /// Where a task is in its life.
    public enum State: Sendable, Hashable {
        /// Not started, or paused by ``LoadTask/suspend()``.
        case suspended
        /// Loading.
        case running
        /// ``LoadTask/cancel()`` was called; the task will complete with a cancelled error.
        case canceling
        /// Done, with or without an error.
        case completed
    }

    /// A number unique among the tasks of this process.
    public let taskIdentifier: Int
    /// The request the task was made with.
    public let originalRequest: LoadRequest
    /// The task's own delegate, heard before the session's. Held until the task has told it of its completion, then
    /// let go (`nil`), as URLSession's task lets its delegate go: a delegate that keeps its task makes no cycle.
    public var delegate: (any LoadTaskDelegate)? {
        guard delegateQueue != nil else { return nil }
        return mutable.withLock { $0.delegate }
    }
    let session: LoaderSession
    /// The delegates' calls, one at a time; `nil` when there is no delegate.
    private let delegateQueue: DelegateQueue?

    private let mutable: Locked<Mutable>
    /// When the task was made, the start of its metrics' interval; `nil` when it collects none.
    private let createdAt: Date?

    private struct Mutable {
        var state: State
        /// Why the task was cancelled, when the loader cancelled it (``cancel(because:)``).
        var cancelReason: String?
        /// ``delegate``, until the completion has been told.
        var delegate: (any LoadTaskDelegate)?
        var currentRequest: LoadRequest
        var response: LoadResponse?
        var error: LoadError?
        var progress = TransferProgress()
        /// For a resumed download: the bytes its file had, and the whole file's size when known.
        var resumedAt: (offset: Int64, total: Int64?)?
        var priority: Float = LoadTask.defaultPriority
        var taskDescription: String?
        var isCancelled = false
        var starter: (@Sendable (LoadTask) -> Void)?
        var swiftTask: Task<Void, Never>?
        /// Cancels the Swift task the app's middleware runs in, for a load of the async API (see ``runsInCallersTask``).
        var cancelMiddleware: (@Sendable () -> Void)?
        var driver: HandlerDriver?
        var resumeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Ends the wait for a delegate's async answer (see `asking(_:)`), when one is awaited.
        var endDelegateWait: (@Sendable () -> Void)?
        /// When the first handler started (the watchdog's clock), for the resource timeout.
        var resourceClockStart: UInt64?
        /// Whether the body went to a stream's reader (``handBodyToReader()``).
        var readerHasBody = false
        /// Time spent suspended after the first start, on the watchdog's clock: timeouts do not count it.
        var pause = Pause()
        /// The transactions handlers reported, for ``LoadTaskMetrics`` (only with a delegate to give them to).
        var transactions: [LoadTransactionMetrics] = []
        /// How many of `transactions` the delegates have been told of.
        var transactionsTold = 0
        /// Redirects followed.
        var redirectCount = 0
    }

    /// Suspensions of a started task, as its timeouts see them.
    struct Pause: Sendable {
        /// When the running suspension began; `nil` while the task runs.
        var since: UInt64?
        /// Nanoseconds spent in suspensions that have ended.
        var total: UInt64 = 0
        /// When the last suspension ended (0: never): the load was not idle before then.
        var endedAt: UInt64 = 0

        /// Ends a running suspension at `now`.
        mutating func end(at now: UInt64) {
            guard let since else { return }
            total &+= now >= since ? now - since : 0
            endedAt = now
            self.since = nil
        }
    }

    /// The default priority, 0.5.
    public static let defaultPriority: Float = 0.5
    /// A priority below the default.
    public static let lowPriority: Float = 0.25
    /// A priority above the default.
    public static let highPriority: Float = 0.75

    private static let nextIdentifier = Atomic<Int>(1)

    init(session: LoaderSession, request: LoadRequest, delegate: (any LoadTaskDelegate)?, hasSessionDelegate: Bool,
         starter: (@Sendable (LoadTask) -> Void)?) {
        self.session = session
        self.originalRequest = request
        // Only a task with a delegate to call needs one (most loads have none).
        self.delegateQueue = delegate != nil || hasSessionDelegate ? DelegateQueue() : nil
        // Read only for metrics, which only a delegate gets: a clock read fewer on every other load.
        self.createdAt = delegateQueue == nil ? nil : Date()
        self.taskIdentifier = Self.nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
        self.mutable = Locked(Mutable(state: starter == nil ? .running : .suspended, delegate: delegate, currentRequest: request,
                                      starter: starter))
        self.runsInCallersTask = starter == nil
    }

    /// Whether the load runs in the caller's Swift task (the async API), which ``cancel()`` cannot cancel, rather than
    /// in one of the session's (a task made to be resumed).
    let runsInCallersTask: Bool

    // MARK: Reading

    /// Where the task is in its life.
    public var state: State { mutable.withLock { $0.state } }
    /// The request being loaded now: after a redirect, the redirected one.
    public var currentRequest: LoadRequest { mutable.withLock { $0.currentRequest } }
    /// The response head, once received.
    public var response: LoadResponse? { mutable.withLock { $0.response } }
    /// The error the task ended with, if it failed.
    public var error: LoadError? { mutable.withLock { $0.error } }
    /// How far the transfer has come.
    public var progress: TransferProgress { mutable.withLock { $0.progress } }

    /// A hint in 0…1 for how urgently a handler should serve this task relative to others. Kept for the app
    /// and its own handlers; the built-in handlers do not read it.
    public var priority: Float {
        get { mutable.withLock { $0.priority } }
        set { mutable.withLock { $0.priority = min(1, max(0, newValue)) } }
    }

    /// A label for the app's own use.
    public var taskDescription: String? {
        get { mutable.withLock { $0.taskDescription } }
        set { mutable.withLock { $0.taskDescription = newValue } }
    }

    /// `LoadTask #3 (running) data:,Hello`.
    public var description: String {
        "LoadTask #\(taskIdentifier) (\(state)) \(originalRequest.url.absoluteStringHidingPassword.prefix(200))"
    }

    // MARK: Control

    /// Starts a task that was never started, or continues one paused by ``suspend()``.
    public func resume() {
        let (starter, waiters) = mutable.withLock { m -> ((@Sendable (LoadTask) -> Void)?, [CheckedContinuation<Void, Never>]) in
            guard m.state == .suspended || (m.state == .canceling && m.starter != nil) else { return (nil, []) }
            if m.state == .suspended { m.state = .running }
            m.pause.end(at: Watchdog.now())
            defer { m.starter = nil; m.resumeWaiters = [] }
            return (m.starter, m.resumeWaiters)
        }
        waiters.forEach { $0.resume() }
        starter?(self)
    }

    /// Pauses a running task: its body stops being read, so backpressure holds the handler back. While
    /// suspended the task is not subject to timeouts: the request timeout counts again from ``resume()``, and
    /// the time spent suspended is added to the resource timeout.
    public func suspend() {
        mutable.withLock { m in
            guard m.state == .running else { return }
            m.state = .suspended
            m.pause.since = Watchdog.now()
        }
    }

    /// Cancels the task: its handler is stopped and it completes with ``LoadError/Code/cancelled``, a
    /// streamed one too, whether or not its reader reads again. A task that was never started completes
    /// without loading, soon after (its completion handler is still called).
    public func cancel() {
        cancel(because: nil)
    }

    /// ``cancel()``, with why, which the `cancelled` error then says (an invalidated session's task).
    func cancel(because reason: String?) {
        let (driver, swiftTask, waiters, starter, delegateWait, middleware) = mutable.withLock { m in
            guard m.state != .completed, !m.isCancelled else {
                return (HandlerDriver?.none, Task<Void, Never>?.none, [CheckedContinuation<Void, Never>](),
                        (@Sendable (LoadTask) -> Void)?.none, (@Sendable () -> Void)?.none, (@Sendable () -> Void)?.none)
            }
            m.isCancelled = true
            m.cancelReason = reason
            m.state = .canceling
            defer { m.resumeWaiters = []; m.starter = nil; m.endDelegateWait = nil; m.cancelMiddleware = nil }
            return (m.driver, m.swiftTask, m.resumeWaiters, m.starter, m.endDelegateWait, m.cancelMiddleware)
        }
        driver?.cancel(with: LoadError(.cancelled, url: currentRequest.url))
        swiftTask?.cancel()
        middleware?()
        waiters.forEach { $0.resume() }
        delegateWait?()
        starter?(self)
        // Its delegates hear of it on another thread: the caller may hold a lock a delegate takes.
        if readerHasBody { complete(with: LoadError(.cancelled, url: currentRequest.url), deliveringElsewhere: true) }
    }

    /// Whether the body went to a reader who alone would complete the task (a stream from ``LoaderSession/bytes(for:delegate:)``).
    private var readerHasBody: Bool { mutable.withLock { $0.readerHasBody } }

    /// Records that the body went to a stream's reader. Such a reader may never read again, so from now on a
    /// cancel completes the task itself, as URLSession's does, instead of waiting for the reader to notice.
    func handBodyToReader() {
        let cancelled = mutable.withLock { m -> Bool in
            m.readerHasBody = true
            return m.isCancelled
        }
        if cancelled { complete(with: LoadError(.cancelled, url: currentRequest.url), deliveringElsewhere: true) }
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { mutable.withLock { $0.isCancelled } }

    // MARK: For the session

    func setSwiftTask(_ task: Task<Void, Never>) {
        let cancelNow = mutable.withLock { m -> Bool in
            m.swiftTask = task
            return m.isCancelled
        }
        if cancelNow { task.cancel() }
    }

    /// Notes what cancels the Swift task the app's middleware runs in (`nil` once it has returned); calls it at once if
    /// the task is cancelled already.
    func setCancelMiddleware(_ cancel: (@Sendable () -> Void)?) {
        let cancelNow = mutable.withLock { m -> Bool in
            m.cancelMiddleware = m.isCancelled ? nil : cancel
            return m.isCancelled
        }
        if cancelNow { cancel?() }
    }

    /// Throws ``LoadError/Code/cancelled``, naming `url` (else the current request's), once ``cancel()`` was
    /// called. The chain checks it before each layer; readers before they report each body chunk, so that no
    /// data event follows a cancel, even for a body that had arrived whole.
    func checkCancelled(_ url: URL? = nil) throws {
        guard isCancelled else { return }
        throw LoadError(.cancelled, url: url ?? currentRequest.url)
    }

    /// When the task's first handler started, on the watchdog's clock: the resource timeout counts from there
    /// across every hop (redirects, authentication retries), as URLSession's counts for the whole task.
    func resourceClockStart() -> UInt64 {
        mutable.withLock { m in
            if let start = m.resourceClockStart { return start }
            let now = Watchdog.now()
            m.resourceClockStart = now
            // Suspended before the clock started: that time was never counted, and a suspension still running
            // counts from now.
            m.pause.total = 0
            if m.pause.since != nil { m.pause.since = now }
            return now
        }
    }

    /// The task's suspensions, for its driver's timeouts.
    var pause: Pause { mutable.withLock { $0.pause } }

    /// Makes `driver` the one that ``cancel()`` reaches, and records the request it loads.
    func attach(_ driver: HandlerDriver, request: LoadRequest) throws {
        let cancelled = mutable.withLock { m -> Bool in
            guard !m.isCancelled else { return true }
            m.driver = driver
            m.currentRequest = request
            return false
        }
        if cancelled { throw LoadError(.cancelled, url: request.url) }
    }

    /// Waits while the task is suspended. Cancelling the waiting Swift task cancels the load (which ends the
    /// wait), as cancelling it at any other point of a read does: a suspended reader is never left waiting.
    func waitWhileSuspended() async {
        guard mutable.withLock({ $0.state == .suspended }) else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let resumeNow = mutable.withLock { m -> Bool in
                    guard m.state == .suspended else { return true }
                    m.resumeWaiters.append(waiter)
                    return false
                }
                if resumeNow { waiter.resume() }
            }
        } onCancel: {
            cancel()
        }
    }

    func didReceive(_ response: LoadResponse) {
        tellCollected()
        mutable.withLock { m in
            m.response = response
            m.progress.countOfBytesExpectedToReceive = response.expectedContentLength
        }
        eachDelegate { $0.loadTask(self, didReceive: response) }
    }

    /// What ``didReceive(_:)`` and then ``didReceive(_:notify:)`` for its one chunk (if any) do, for a body that
    /// came whole, for a task without delegates (``hasDelegates``; one with them is told by
    /// ``didReceiveWaitingForDelegates(_:wholeBody:)``),
    /// under one lock instead of four, with the checks the reading loop makes around a chunk: throws
    /// ``LoadError/Code/cancelled`` once the task was cancelled, and returns whether it is suspended, so that the
    /// reader waits (``waitWhileSuspended()``) as it would after a chunk.
    func didReceive(_ response: LoadResponse, wholeBody data: Data) throws -> Bool {
        assert(delegateQueue == nil, "a task with delegates is told of a whole body by didReceiveWaitingForDelegates(_:wholeBody:)")
        let (cancelled, suspended) = mutable.withLock { m -> (Bool, Bool) in
            m.response = response
            m.progress.countOfBytesExpectedToReceive = response.expectedContentLength
            if !m.isCancelled { m.progress.countOfBytesReceived += Int64(data.count) }
            return (m.isCancelled, m.state == .suspended)
        }
        if cancelled { throw LoadError(.cancelled, url: currentRequest.url) }
        return suspended
    }

    /// ``didReceive(_:wholeBody:)`` for a task with delegates: step by step, waiting for them after each event, since
    /// each may cancel or suspend the task; then waits while it is suspended.
    func didReceiveWaitingForDelegates(_ response: LoadResponse, wholeBody data: Data) async throws {
        didReceive(response)
        await delegatesHeard()
        try checkCancelled()
        if !data.isEmpty {
            didReceive(data, notify: true)
            await delegatesHeard()
        }
        await waitWhileSuspended()
    }

    /// Whether the task has a delegate to tell of its events (its own or the session's).
    var hasDelegates: Bool { delegateQueue != nil }

    func didReceive(_ data: Data, notify: Bool) {
        mutable.withLock { $0.progress.countOfBytesReceived += Int64(data.count) }
        // A stream's reader may hand on a chunk just as a cancel completes the task from another thread:
        // nothing follows the completion.
        if notify { eachDelegate(droppedAfterEnd: true) { $0.loadTask(self, didReceive: data) } }
    }

    func didWrite(_ count: Int64) {
        let (written, expected) = mutable.withLock { m -> (Int64, Int64?) in
            m.progress.countOfBytesReceived += count
            guard let resumedAt = m.resumedAt else { return (m.progress.countOfBytesReceived, m.progress.countOfBytesExpectedToReceive) }
            return (resumedAt.offset + m.progress.countOfBytesReceived, resumedAt.total)
        }
        eachDelegate {
            $0.loadTask(self, didWriteData: count, totalBytesWritten: written, totalBytesExpectedToWrite: expected)
        }
    }

    /// A resumed download goes on from `offset` bytes of its file, towards `total` when known.
    func didResume(at offset: Int64, expectedTotal total: Int64?) {
        mutable.withLock { $0.resumedAt = (offset, total) }
        eachDelegate { $0.loadTask(self, didResumeAtOffset: offset, expectedTotalBytes: total) }
    }

    func didSend(total: Int64, expected: Int64?) {
        let sent = mutable.withLock { m -> Int64 in
            let delta = total - m.progress.countOfBytesSent
            m.progress.countOfBytesSent = total
            m.progress.countOfBytesExpectedToSend = expected
            return delta
        }
        guard sent > 0 else { return }
        // From the handler's side, which may still be sending as the response ends the task: nothing follows
        // the completion.
        eachDelegate(droppedAfterEnd: true, elsewhere: true) {
            $0.loadTask(self, didSendBodyData: sent, totalBytesSent: total, totalBytesExpectedToSend: expected)
        }
    }

    /// Asks the task's delegate, then the session's, whether to follow a redirect; throws
    /// ``LoadError/Code/cancelled`` if the task is cancelled while they answer.
    func willRedirect(_ response: LoadResponse, to request: LoadRequest) async throws(LoadError) -> LoadRequest? {
        tellCollected()
        // The collected transactions are told before the question, whichever thread delivers them.
        await delegatesHeard()
        var proposed: LoadRequest? = request
        let delegate = self.delegate
        if let delegate, let current = proposed {
            proposed = try await asking { await delegate.loadTask(self, willPerformRedirection: response, newRequest: current) }
        }
        if let sessionDelegate = session.delegate, sessionDelegate !== delegate, let current = proposed {
            proposed = try await asking { await sessionDelegate.loadTask(self, willPerformRedirection: response, newRequest: current) }
        }
        if let proposed {
            mutable.withLock { m in
                m.currentRequest = proposed
                m.redirectCount += 1
            }
        }
        return proposed
    }

    /// Asks the task's delegate, then the session's, how to answer a challenge; throws
    /// ``LoadError/Code/cancelled`` if the task is cancelled while they answer.
    func didReceive(_ challenge: AuthenticationChallenge) async throws(LoadError) -> ChallengeDisposition {
        tellCollected()
        await delegatesHeard()
        let delegate = self.delegate
        if let delegate {
            let answer = try await asking { await delegate.loadTask(self, didReceive: challenge) }
            if case .performDefaultHandling = answer {} else { return answer }
        }
        if let sessionDelegate = session.delegate, sessionDelegate !== delegate {
            return try await asking { await sessionDelegate.loadTask(self, didReceive: challenge) }
        }
        return .performDefaultHandling
    }

    /// A delegate's async answer, unless ``cancel()`` comes first (``DelegateAnswer``).
    /// The resource timeout runs on while a delegate answers: a wait past it ends with ``LoadError/Code/timedOut``, as
    /// the load would have had a handler been running (only handlers are watched).
    private func asking<Answer: Sendable>(_ ask: @escaping @Sendable () async -> Answer) async throws(LoadError) -> Answer {
        let cancelled = LoadError(.cancelled, url: currentRequest.url)
        let timedOut = Locked(false)
        let clock = resourceTimeLeft().map { left in
            Task { [weak self] in
                try? await Task.sleep(for: .nanoseconds(Int64(left)))
                guard !Task.isCancelled, let self else { return }
                timedOut.withLock { $0 = true }
                self.mutable.withLock { $0.endDelegateWait }?()
            }
        }
        let answer = await DelegateAnswer.awaiting(ask) { end in
            mutable.withLock { m -> Bool in
                if !m.isCancelled { m.endDelegateWait = end }
                return m.isCancelled
            }
        }
        clock?.cancel()
        mutable.withLock { $0.endDelegateWait = nil }
        if answer == nil, timedOut.withLock({ $0 }), !isCancelled {
            let seconds = session.configuration.timeoutIntervalForResource
            throw LoadError(.timedOut, url: currentRequest.url, reason: "the resource timeout (\(seconds.printed("%g")) s) passed while a delegate answered")
        }
        guard let answer, !isCancelled else { throw cancelled }
        return answer
    }

    /// Nanoseconds left of the resource timeout, not counting time suspended; `nil` when no handler has started its
    /// clock or the timeout is none (a billion seconds or more, as the watchdog reads it).
    private func resourceTimeLeft() -> UInt64? {
        let seconds = session.configuration.timeoutIntervalForResource
        guard seconds < 1e9 else { return nil }
        let limit = UInt64(max(0, seconds) * 1e9)
        return mutable.withLock { m -> UInt64? in
            guard let start = m.resourceClockStart else { return nil }
            let now = Watchdog.now()
            let paused = m.pause.total + (m.pause.since.map { now - min(now, $0) } ?? 0)
            let spent = (now - min(now, start)) - min(now - min(now, start), paused)
            return limit - min(limit, spent)
        }
    }

    /// Ends the task once; returns the error it ended with (a cancelled task always ends cancelled). `deliveringElsewhere`:
    /// the delegates hear of it on a Swift task of their queue's, not on the caller's thread (a ``cancel()``).
    @discardableResult
    func complete(with error: LoadError?, deliveringElsewhere: Bool = false) -> LoadError? {
        let outcome = mutable.withLock { m -> (first: Bool, error: LoadError?, waiters: [CheckedContinuation<Void, Never>]) in
            guard m.state != .completed else { return (false, m.error, []) }
            var error = error
            if m.isCancelled, error != nil || m.state == .canceling, error?.code != .cancelled {
                // A download's resume data goes with it, for the delegates too.
                var cancelled = LoadError(.cancelled, url: m.currentRequest.url, reason: m.cancelReason)
                cancelled.resumeData = error?.resumeData
                error = cancelled
            } else if m.isCancelled, error?.code == .cancelled, error?.reason == nil, let reason = m.cancelReason {
                // Every cancelled error ends here: the loader's reason, if it gave one, is added once, for all of them.
                error?.reason = reason
            }
            m.state = .completed
            m.error = error
            m.driver = nil
            m.swiftTask = nil
            m.starter = nil
            // Readers waiting for a resume (another one ended the task): nothing is left to wait for.
            defer { m.resumeWaiters = [] }
            return (true, error, m.resumeWaiters)
        }
        guard outcome.first else { return outcome.error }
        outcome.waiters.forEach { $0.resume() }
        guard let delegateQueue else {
            session.taskDidComplete(self)
            return outcome.error
        }
        let metrics = finishedMetrics()
        let delegates = self.delegates
        let error = outcome.error
        delegateQueue.add(ends: true, elsewhere: deliveringElsewhere) { [self] in
            tellCollectedNow(to: delegates)
            if let metrics { delegates.forEach { $0.loadTask(self, didFinishCollecting: metrics) } }
            delegates.forEach { $0.loadTask(self, didCompleteWithError: error) }
            // Told all it will hear: let go, so that a delegate that holds its task does not keep both alive.
            mutable.withLock { $0.delegate = nil }
            // After its delegates heard the end: the session's invalid report comes after every task's completion.
            session.taskDidComplete(self)
        }
        return outcome.error
    }

    // MARK: Metrics

    /// Whether handlers should report ``LoadTransactionMetrics``: only a task with a delegate hands them on.
    var collectsMetrics: Bool { createdAt != nil }

    /// A transaction a handler reported as its response head arrived: kept for the task's metrics. Returns its place,
    /// for ``transactionEnded(_:)``.
    ///
    /// The delegates hear of it from the task's side, not the handler's thread (an event loop, which a slow delegate
    /// would hold up): before the next event they are told of (a response, a redirect, a challenge, the end).
    func didCollect(_ transaction: LoadTransactionMetrics) -> Int {
        mutable.withLock { m in
            m.transactions.append(transaction)
            return m.transactions.count - 1
        }
    }

    /// The handler of transaction `index` ended (its body all in, or its failure): that is its response's end.
    /// `bodyBytes` is what it delivered of the body.
    func transactionEnded(_ index: Int, bodyBytes: Int64) {
        let now = Date()
        mutable.withLock { m in
            guard m.transactions.indices.contains(index), m.transactions[index].responseEndDate == nil else { return }
            m.transactions[index].responseEndDate = now
            m.transactions[index].countOfResponseBodyBytesReceived = bodyBytes
        }
    }

    /// Tells the delegates of the transactions collected since they last heard, in order.
    private func tellCollected() {
        // Also once completed: the completion's call tells the last ones.
        guard collectsMetrics, mutable.withLock({ $0.transactionsTold < $0.transactions.count }), let delegateQueue else { return }
        let delegates = self.delegates
        // What is untold is read as the call is delivered: the queue delivers one call at a time, so two calls cannot tell
        // one transaction twice, nor out of order.
        delegateQueue.add { [self] in tellCollectedNow(to: delegates) }
    }

    /// What ``tellCollected()`` queues: tells `delegates` of the transactions untold until now.
    private func tellCollectedNow(to delegates: [any LoadTaskDelegate]) {
        let untold = mutable.withLock { m -> ArraySlice<LoadTransactionMetrics> in
            defer { m.transactionsTold = m.transactions.count }
            return m.transactions[m.transactionsTold...]
        }
        for transaction in untold { delegates.forEach { $0.loadTask(self, didCollect: transaction) } }
    }

    /// The task's metrics as it completes; `nil` when it collects none.
    private func finishedMetrics() -> LoadTaskMetrics? {
        guard let createdAt else { return nil }
        let (transactions, redirects) = mutable.withLock { ($0.transactions, $0.redirectCount) }
        let end = Date()
        return LoadTaskMetrics(transactions: transactions, taskInterval: DateInterval(start: createdAt, end: max(createdAt, end)),
                               redirectCount: redirects)
    }

    /// The task's delegate, then the session's (unless the same), as they are now: a call queued before the task let its
    /// delegate go still reaches it.
    private var delegates: [any LoadTaskDelegate] {
        let delegate = mutable.withLock { $0.delegate }
        guard let sessionDelegate = session.delegate, sessionDelegate !== delegate else { return delegate.map { [$0] } ?? [] }
        return delegate.map { [$0, sessionDelegate] } ?? [sessionDelegate]
    }

    /// Queues `body` for each delegate (``DelegateQueue``); `droppedAfterEnd`: not once the completion is queued;
    /// `elsewhere`: reported from a handler's thread, which delivers nothing itself.
    private func eachDelegate(droppedAfterEnd: Bool = false, elsewhere: Bool = false, _ body: @escaping @Sendable (any LoadTaskDelegate) -> Void) {
        guard let delegateQueue else { return }
        let delegates = self.delegates
        delegateQueue.add(droppedAfterEnd: droppedAfterEnd, elsewhere: elsewhere) { delegates.forEach(body) }
    }

    /// Returns once the delegates have heard every event so far (at once for a task without one): the reader goes on
    /// after they heard each event it reported, and an async load returns, and a completion handler runs, after they
    /// heard the task's end.
    @inline(__always)  // On every load's path: without delegates, one branch, no call (nor its async frame).
    func delegatesHeard() async {
        guard let delegateQueue else { return }
        await delegateQueue.delivered()
    }

    /// ``complete(with:deliveringElsewhere:)``, then ``delegatesHeard()``: how a reader ends the task, so that the caller
    /// goes on once the delegates heard the end.
    @inline(__always)
    func completeOnceHeard(with error: LoadError?) async -> LoadError? {
        let ended = complete(with: error)
        await delegatesHeard()
        return ended
    }
}
