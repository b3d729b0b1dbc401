import FoundationEssentials
import HTTPTypes
import Synchronization

/// Coordinates loads: the entry point of the library, shaped like URLSession.
///
/// A session runs each request through its middleware, outermost first, to the handler its registry
/// chooses (see ``SchemeRegistry`` for the order), and streams the response back up.
///
/// ```swift
/// StandardSchemes.register()          // data:, file: … into the process-wide registry
/// let (data, response) = try await LoaderSession.shared.data(from: URL(string: "data:,Hello")!)
/// ```
public final class LoaderSession: Sendable {
    /// A session with the default configuration and no delegate.
    public static let shared = LoaderSession(configuration: .default)

    /// The settings the session was made with.
    public let configuration: Configuration
    /// The session's delegate, which hears every task's events after the task's own delegate.
    ///
    /// `nil` once the session has told it that it became invalid: the session lets its delegate go then, as
    /// URLSession does, so that a delegate that keeps its session does not keep both alive.
    public var delegate: (any LoaderSessionDelegate)? { delegateSlot.withLock { $0 } }
    private let delegateSlot: Locked<(any LoaderSessionDelegate)?>
    /// The session's handlers: its configuration's `handlerClasses` and whatever is registered here later,
    /// falling back to ``SchemeRegistry/default``.
    public let registry: SchemeRegistry

    /// A number unique among the sessions of this process; requests carry it as `sessionIdentifier`.
    public let identifier: Int
    private static let nextIdentifier = Atomic<Int>(1)
    private let chain: MiddlewareChain
    /// The session's authentication layer, whose kept `Basic` credentials a WebSocket handshake sends ahead too.
    private let authentication: AuthenticationMiddleware
    private let tasks = Locked(TaskTable())
    /// Whether the handlers were told that this session ended.
    private let ended = Atomic<Bool>(false)

    private struct TaskTable {
        var running: [Int: LoadTask] = [:]
        /// Work of the session's that is not a ``LoadTask`` (an open WebSocket), by the number ``join(cancel:)``
        /// gave it, with what cancels it.
        var members: [Int: @Sendable () -> Void] = [:]
        var nextMember = 0
        var invalidated = false
        var invalidationReported = false
    }

    /// Makes a session.
    /// - Parameters:
    ///   - configuration: Its settings.
    ///   - delegate: Hears the session's and every task's events.
    public init(configuration: Configuration = .default, delegate: (any LoaderSessionDelegate)? = nil) {
        self.configuration = configuration
        self.delegateSlot = Locked(delegate)
        self.identifier = Self.nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
        let registry = SchemeRegistry(handlers: configuration.handlerClasses, parent: .default)
        self.registry = registry
        // The app's middleware first, then the built-in policies in the documented order.
        var layers = configuration.middleware
        if configuration.redirectLimit > 0 {
            var redirects = RedirectMiddleware(limit: configuration.redirectLimit, allowedSchemes: configuration.redirectSchemes)
            redirects.hstsStore = configuration.hstsStore
            layers.append(redirects)
        }
        if let hstsStore = configuration.hstsStore { layers.append(HSTSMiddleware(store: hstsStore)) }
        let authentication = AuthenticationMiddleware(store: configuration.credentialStore)
        self.authentication = authentication
        layers.append(authentication)
        if let cookieStore = configuration.cookieStore { layers.append(CookieMiddleware(store: cookieStore)) }
        if let responseCache = configuration.responseCache { layers.append(CacheMiddleware(cache: responseCache)) }
        if configuration.contentDecoding.isEnabled { layers.append(ContentDecodingMiddleware(settings: configuration.contentDecoding)) }
        self.chain = MiddlewareChain(layers: layers)
    }

    /// The `Authorization` of the `Basic` credential this session's loads saw `url`'s server accept for its directory
    /// (and, for one from the credential store, the store still holds), as a load to `url` would send it ahead; `nil`
    /// when none is kept. For a WebSocket handshake, which is no load.
    package func keptAuthorization(for url: URL) -> String? {
        authentication.passingDown(LoadRequest(url: url)).request.headerFields[.authorization]
    }

    /// Forgets the kept credential for `url` if it is still `authorization`: its server refused it.
    package func forgetKeptAuthorization(_ authorization: String, for url: URL) {
        authentication.accepted.forget(for: url, authorization: authorization)
    }

    deinit {
        endForHandlers()
    }

    /// Tells each handler class the session reaches that it has ended, once: invalidated with its last task
    /// done, or released. They close what they kept for it (``SchemeHandler/sessionDidEnd(_:)``).
    private func endForHandlers() {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var seen = Set<ObjectIdentifier>()
        for handler in registry.handlers + SchemeRegistry.default.handlers where seen.insert(ObjectIdentifier(handler)).inserted {
            handler.sessionDidEnd(identifier)
        }
    }

    // MARK: Tasks

    /// The tasks that have not completed.
    public var allTasks: [LoadTask] {
        tasks.withLock { $0.running.values.sorted { $0.taskIdentifier < $1.taskIdentifier } }
    }

    /// Lets running tasks finish, refuses new ones, and tells the delegate when the last has ended.
    ///
    /// Does nothing on ``shared``, as with URLSession: code handed the shared session cannot end it for
    /// the rest of the process.
    public func finishTasksAndInvalidate() {
        guard self !== Self.shared else { return }
        let reportNow = tasks.withLock { table -> Bool in
            table.invalidated = true
            return Self.takeInvalidationReport(&table)
        }
        if reportNow { reportInvalid() }
    }

    /// Cancels every task, refuses new ones, and tells the delegate when the last has ended.
    /// Does nothing on ``shared`` (see ``finishTasksAndInvalidate()``).
    public func invalidateAndCancel() {
        guard self !== Self.shared else { return }
        let (running, members) = tasks.withLock { table -> ([LoadTask], [@Sendable () -> Void]) in
            table.invalidated = true
            return (Array(table.running.values), Array(table.members.values))
        }
        running.forEach { $0.cancel() }
        members.forEach { $0() }
        finishTasksAndInvalidate()
    }

    /// Counts work that is not a ``LoadTask`` (a WebSocket while it is open) among the session's running
    /// work: ``invalidateAndCancel()`` calls `cancel`, and the session is reported invalid only once it has
    /// left (``leave(_:)``). `nil` when the session is invalidated already and takes no new work, unless
    /// `evenIfInvalidated` (work of a task the session still counts, whose report has not gone out).
    package func join(cancel: @escaping @Sendable () -> Void, evenIfInvalidated: Bool = false) -> Int? {
        tasks.withLock { table -> Int? in
            guard !table.invalidated || evenIfInvalidated else { return nil }
            table.nextMember += 1
            table.members[table.nextMember] = cancel
            return table.nextMember
        }
    }

    /// Ends what ``join(cancel:)`` began for `member`; leaving twice does nothing.
    package func leave(_ member: Int) {
        let reportNow = tasks.withLock { table -> Bool in
            guard table.members.removeValue(forKey: member) != nil else { return false }
            return Self.takeInvalidationReport(&table)
        }
        if reportNow { reportInvalid() }
    }

    /// Whether the session was invalidated.
    public var isInvalidated: Bool { tasks.withLock { $0.invalidated } }

    /// Makes a task and tracks it; a task of an invalidated session fails when it runs.
    func makeTask(_ request: LoadRequest, delegate: (any LoadTaskDelegate)?, starter: (@Sendable (LoadTask) -> Void)?) -> LoadTask {
        // Read once (it sits behind a lock): the task needs to know whether there is one, and hears it first.
        let sessionDelegate = self.delegate
        let task = LoadTask(session: self, request: request, delegate: delegate, hasSessionDelegate: sessionDelegate != nil,
                            starter: starter)
        let invalidated = tasks.withLock { table -> Bool in
            table.running[task.taskIdentifier] = task
            return table.invalidated
        }
        sessionDelegate?.session(self, didCreateTask: task)
        // An invalidated session takes no new work: the task ends cancelled as soon as it runs.
        if invalidated { task.cancel(because: "the session was invalidated (finishTasksAndInvalidate or invalidateAndCancel) and takes no new task") }
        return task
    }

    func taskDidComplete(_ task: LoadTask) {
        let reportNow = tasks.withLock { table -> Bool in
            table.running[task.taskIdentifier] = nil
            return Self.takeInvalidationReport(&table)
        }
        if reportNow { reportInvalid() }
    }

    /// Tells the handlers that the session ended and the delegate that it became invalid, then lets the
    /// delegate go.
    private func reportInvalid() {
        endForHandlers()
        let delegate = delegateSlot.withLock { slot in
            defer { slot = nil }
            return slot
        }
        delegate?.session(self, didBecomeInvalidWithError: nil)
    }

    private static func takeInvalidationReport(_ table: inout TaskTable) -> Bool {
        guard table.invalidated, table.running.isEmpty, table.members.isEmpty, !table.invalidationReported else { return false }
        table.invalidationReported = true
        return true
    }

    // MARK: Running a load

    /// Runs the task's request through the chain and returns the response head with its streaming body; the
    /// caller tells the task of the head (``LoadTask/didReceive(_:)``), which it holds anyway: a result held
    /// here too would be part of this async frame, allocated on every load.
    @inline(never)
    func open(_ task: LoadTask) async throws -> LoadResult {
        try await chain.start(prepared(task.originalRequest), context: LoadContext(session: self, task: task))
    }

    // The async functions on every load's path leave their other work to plain functions like this one, kept
    // out of line: an async frame holds everything its function and what it inlines keeps, and each load
    // allocates its frames from its task (a new task's first kilobyte is free; beyond it, each frame that
    // does not fit costs a malloc).

    /// `request` with the session's additional header fields, handler options and identifier.
    @inline(never)
    package func prepared(_ request: LoadRequest) -> LoadRequest {
        var prepared = request
        for field in configuration.additionalHeaderFields where prepared.headerFields[field.name] == nil {
            prepared.headerFields.append(field)
        }
        // Only what differs is set: each change copies the request's storage, which the task shares.
        if !configuration.handlerOptions.isEmpty {
            prepared.options = prepared.options.filling(from: configuration.handlerOptions)
        }
        if prepared.sessionIdentifier != identifier { prepared.sessionIdentifier = identifier }
        return prepared
    }

    /// The innermost layer: chooses the handler, starts it, and waits for its response.
    ///
    /// Called by the chain directly, not through a closure the session made: such a closure held the
    /// configuration, and its frame, allocated on every load, a copy of it.
    static func dispatch(_ request: LoadRequest, context: LoadContext) async throws -> LoadResult {
        let driver = try start(request, task: context.task, session: context.session)
        return try await driver.awaitResult()
    }

    /// Chooses the handler for `request`, makes it and its driver, and starts it.
    @inline(never)
    private static func start(_ request: LoadRequest, task: LoadTask, session: LoaderSession) throws -> HandlerDriver {
        // The request's scheme, lowercased once when its URL was set.
        let scheme = request.scheme
        guard !scheme.isEmpty else {
            throw LoadError(.badURL, url: request.url, reason: "the URL has no scheme")
        }
        guard let handlerClass = session.registry.handlerClass(for: request) else {
            throw LoadError(.unsupportedURL, url: request.url, reason: "no handler is registered for the scheme '\(scheme)'")
        }
        // Nothing above answered from a cache (the session's, if it has one, or an app's layer), and this request may be
        // answered from nowhere else: it fails rather than reach its origin, as URLSession's does when its
        // cache is empty. A handler with no origin to spare (data:, file:) loads it.
        if request.cachePolicy == .returnCacheDataDontLoad, handlerClass.reachesOrigin {
            throw LoadError(.resourceUnavailable, url: request.url,
                            reason: "the request may only be answered from a cache (returnCacheDataDontLoad), and no layer had it")
        }
        let canonical = handlerClass.canonicalRequest(for: request)
        let driver = HandlerDriver(
            url: canonical.url,
            highWatermark: session.configuration.bodyBufferLimit,
            idleTimeout: canonical.timeoutInterval ?? session.configuration.timeoutIntervalForRequest,
            resourceTimeout: session.configuration.timeoutIntervalForResource,
            task: task,
            credentialStore: session.configuration.credentialStore
        )
        let handler = handlerClass.init(request: canonical, cachedResponse: nil, client: driver)
        try task.attach(driver, request: canonical)
        driver.start(handler)
        return driver
    }

    /// Runs `task` to its end in the caller's task: opens it, lets `consume` read the body, completes it.
    /// `undo` gets the value of a load that failed after `consume` returned (cancelled at the end), so that
    /// what it made (a downloaded file) is not left behind.
    func run<Value>(
        _ task: LoadTask,
        consume: (LoadTask, LoadResult) async throws -> Value,
        undo: ((Value) -> Void)? = nil
    ) async throws -> Value {
        do {
            let result = try await open(task)
            task.didReceive(result.response)
            await task.delegatesHeard()
            let value = try await consume(task, result)
            if let error = await task.completeOnceHeard(with: nil) {
                undo?(value)
                throw error
            }
            return value
        } catch {
            throw await Self.failOnceHeard(task, with: error)
        }
    }

    /// Completes `task` with `error` (named after its URL) and returns the error to throw.
    @inline(never)
    static func fail(_ task: LoadTask, with error: any Error) -> LoadError {
        let failure = LoadError.wrapping(error, url: task.currentRequest.url)
        return task.complete(with: failure) ?? failure
    }

    /// ``fail(_:with:)``, returning once the task's delegates heard the end (``LoadTask/delegatesHeard()``).
    static func failOnceHeard(_ task: LoadTask, with error: any Error) async -> LoadError {
        let failure = fail(task, with: error)
        await task.delegatesHeard()
        return failure
    }

    /// Makes a running task for an async call and runs it, forwarding Swift task cancellation to it.
    func perform<Value>(
        _ request: LoadRequest,
        delegate: (any LoadTaskDelegate)?,
        consume: @escaping (LoadTask, LoadResult) async throws -> Value,
        undo: ((Value) -> Void)? = nil
    ) async throws -> Value {
        let task = makeTask(request, delegate: delegate, starter: nil)
        return try await withTaskCancellationHandler {
            try await run(task, consume: consume, undo: undo)
        } onCancel: {
            task.cancel()
        }
    }
}
