import FoundationEssentials
import Synchronization

/// The base class of every scheme handler: subclass it to teach the loader a scheme.
///
/// It has URLProtocol's shape, so a URLProtocol ports by renaming: class methods decide which requests a
/// handler takes (``canInit(with:)``, ``canonicalRequest(for:)``, ``requestIsCacheEquivalent(_:to:)``);
/// the loader makes one instance per load with the request, a cached response and a ``client``; calls
/// ``startLoading()``; and calls ``stopLoading()`` once when the load ends or is cancelled. A handler that keeps
/// something between loads (open connections, logins) lets go of a session's share in ``sessionDidEnd(_:)``.
///
/// Most handlers need only one `async` method: override ``load()``, report the response and body through
/// ``client``, and return. Returning sends the finish event and throwing sends the failure, unless the
/// handler sent a terminal event itself. Cancellation arrives as Swift task cancellation.
///
/// ```swift
/// final class EchoHandler: SchemeHandler, @unchecked Sendable {
///     override class var supportedSchemes: Set<String> { ["echo"] }
///     override func load() async throws {
///         let body = Data(request.url.absoluteString.utf8)
///         client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(body.count)))
///         try await client.handler(self, deliver: body)
///     }
/// }
/// ```
///
/// ## Threading contract
/// - ``startLoading()`` is called once, on any thread; ``stopLoading()`` afterwards, on any thread, possibly
///   while the handler's own work is still running, and possibly more than once (an override must be safe to
///   repeat, as the base class's is; the conformance suite checks it). When the load ends by the handler's own
///   report (``SchemeHandlerClient/handlerDidFinishLoading(_:)``, a failure, or the last body chunk), the loader
///   calls ``stopLoading()`` within that call, on the handler's thread, before it returns: so a handler must not
///   hold, across those calls, a lock its ``stopLoading()`` takes, nor make ``stopLoading()`` wait for the thread
///   that reports. (A `load()` override need not care: the base class's stop takes no lock.) Otherwise neither
///   is called on a thread the handler is blocking, so either may take a lock the handler's work also takes.
/// - The client may be called from any thread. A handler reports its events in order (from one task or
///   queue at a time). After ``stopLoading()`` returns, further events are ignored; the handler should stop
///   sending them at once (the conformance suite allows those in flight 200 ms, and four chunks).
/// - The class is `Sendable` because the loader hands instances between threads. Its own stored
///   properties are immutable or atomic; a subclass that adds mutable state must guard it too
///   (``Locked``, or an atomic), which is why subclasses are declared `@unchecked Sendable`.
/// - Never block a Swift concurrency thread: use `async` I/O or a thread of your own for blocking calls.
open class SchemeHandler: @unchecked Sendable {
    // @unchecked: `request`, `cachedResponse` and `client` are immutable; `running` is atomic.

    /// The schemes this handler serves, lowercased. The default ``canInit(with:)`` accepts a request
    /// exactly when its scheme is in this set, and the registry asks a handler only about requests of
    /// these schemes — leave it empty to be asked about every request.
    open class var supportedSchemes: Set<String> { [] }

    /// Whether this handler can load `request`. The default accepts the ``supportedSchemes``.
    open class func canInit(with request: LoadRequest) -> Bool {
        schemes(of: self).contains(request.scheme)
    }

    /// Each class's ``supportedSchemes``, read once: the default ``canInit(with:)`` runs on every load,
    /// and an override of the property typically builds a new set each time it is read.
    private static let schemesByClass = Locked<[ObjectIdentifier: Set<String>]>([:])

    private static func schemes(of handlerClass: SchemeHandler.Type) -> Set<String> {
        let id = ObjectIdentifier(handlerClass)
        if let known = schemesByClass.withLock({ $0[id] }) { return known }
        let schemes = handlerClass.supportedSchemes
        schemesByClass.withLock { $0[id] = schemes }
        return schemes
    }

    /// Whether this handler's loads reach an origin a cache could spare (a server): a request whose cache
    /// policy is ``CachePolicy/returnCacheDataDontLoad``, answered by no layer, is refused before such a
    /// handler starts. `true` by default; a handler that answers from the URL itself or from local files
    /// (`data:`, `file:`) says `false`, and its loads go ahead under that policy.
    open class var reachesOrigin: Bool { true }

    /// The canonical form of `request`: the loader loads this one and a cache keys on it. Must be
    /// idempotent (canonicalizing a canonical request changes nothing). The default returns it unchanged.
    open class func canonicalRequest(for request: LoadRequest) -> LoadRequest {
        request
    }

    /// The session whose ``LoaderSession/identifier`` this is has ended: it was invalidated and its last task
    /// completed, or it was released. Let go of what was kept for its loads (idle connections, logins). Called
    /// once per session for each handler class its registry reaches (its own and the default registry's), on
    /// the thread that ended the session; it must not block. The default does nothing.
    open class func sessionDidEnd(_ identifier: Int) {}

    /// Whether two requests load the same resource, for a cache. The default compares the canonical
    /// requests' URLs and methods.
    open class func requestIsCacheEquivalent(_ a: LoadRequest, to b: LoadRequest) -> Bool {
        let ca = canonicalRequest(for: a), cb = canonicalRequest(for: b)
        return ca.url == cb.url && ca.method == cb.method
    }

    /// The request to load (already canonical).
    public let request: LoadRequest
    /// A cached response the handler may validate or serve, or `nil`.
    public let cachedResponse: CachedResponse?
    /// Where the handler reports its events.
    public let client: any SchemeHandlerClient

    /// The task running ``load()`` and whether the load was stopped, in one atomic word: 0 at first,
    /// ``stoppedMark`` once stopped, otherwise the address of a retained ``TaskBox``. A word rather than a
    /// lock: a lock is an allocation of its own on every load, and a load that makes no task (the HTTP
    /// fast path) needs nothing more.
    private let running = Atomic<UInt>(0)
    private static let stoppedMark: UInt = 1

    /// The task of a handler that runs ``load()``, kept to be cancelled by ``stopLoading()``.
    private final class TaskBox: Sendable {
        let task: Task<Void, Never>
        init(_ task: Task<Void, Never>) { self.task = task }
    }

    /// Makes a handler for one load. The loader calls this; a subclass that overrides it must call it.
    /// - Parameters:
    ///   - request: The request to load.
    ///   - cachedResponse: A cached response for the request, if any.
    ///   - client: Where to report events.
    public required init(request: LoadRequest, cachedResponse: CachedResponse?, client: any SchemeHandlerClient) {
        self.request = request
        self.cachedResponse = cachedResponse
        // The loader's own client knows when the load has ended; any other (a test's, the conformance
        // suite's) is wrapped to learn it. Unwrapped, each load spares an allocation and an indirection.
        self.client = client is HandlerDriver ? client : TerminalTrackingClient(wrapping: client)
    }

    /// Whether a terminal event has reached the client (or the load ended from the loader's side).
    private var clientHasTerminated: Bool {
        if let driver = client as? HandlerDriver { return driver.hasTerminated }
        return (client as? TerminalTrackingClient)?.hasTerminated ?? false
    }

    /// Starts the load. The default runs ``load()`` in a new task. When the caller's task prefers no task
    /// executor (the session's own path runs on Swift's global executor), or the handler names its
    /// ``loadExecutor``, the task starts at once on the calling thread and leaves it at its first
    /// suspension: a load that needs no waiting (a `data:` URL) ends without a thread hop. A caller on a
    /// task executor of its own (an event loop) or on no task at all hands the load to the global executor
    /// instead, so that a handler that blocks never runs on that caller's thread. (A caller on an actor
    /// starts the task inline too: the operation below is `@concurrent` and leaves the actor on entry,
    /// which is why it must stay so.) Override this (and ``stopLoading()``) only for callback-driven
    /// handlers.
    open func startLoading() {
        let executor = loadExecutor
        let operation: @concurrent @Sendable () async -> Void = { [self] in
            // Stopped before this task began (one handed to the global executor may begin late): load() would only
            // work, and report, for nobody.
            guard !isStopped else { return }
            do {
                try await load()
                if !clientHasTerminated, !isStopped { client.handlerDidFinishLoading(self) }
            } catch {
                if !clientHasTerminated, !isStopped {
                    client.handler(self, didFailWith: LoadError.wrapping(error, url: request.url))
                }
            }
        }
        let inline = executor != nil || Self.callerPrefersNoExecutor()
        // Without a preference the call leaves the argument out: an optional that is nil only at run time
        // still takes the runtime's preference path (370 ns a task against 270 in a micro-benchmark); a nil
        // known at compile time is compiled away.
        let task = switch (inline, executor) {
        case (true, nil): Task.immediate(operation: operation)
        case (true, let executor?): Task.immediate(executorPreference: executor, operation: operation)
        case (false, nil): Task(operation: operation)
        case (false, let executor?): Task(executorPreference: executor, operation: operation)
        }
        let box = UInt(bitPattern: Unmanaged.passRetained(TaskBox(task)).toOpaque())
        var current = running.load(ordering: .acquiring)
        while current != Self.stoppedMark {
            let (exchanged, found) = running.compareExchange(expected: current, desired: box, ordering: .acquiringAndReleasing)
            guard exchanged else {
                current = found
                continue
            }
            // A second start (a contract breach) leaves the first task running, untracked, as it always did.
            if current != 0 { Self.releaseBox(current) }
            return
        }
        // Stopped before the task was recorded: nobody else will cancel it.
        Self.releaseBox(box)
        task.cancel()
    }

    /// Lets go of the ``TaskBox`` whose address is `bits`, returning its task.
    @discardableResult
    private static func releaseBox(_ bits: UInt) -> Task<Void, Never> {
        Unmanaged<TaskBox>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue().task
    }

    deinit {
        let bits = running.load(ordering: .acquiring)
        if bits != 0, bits != Self.stoppedMark { Self.releaseBox(bits) }
    }

    /// Whether the caller runs in a task with no task-executor preference. Unwrapped with `guard let`: comparing
    /// the optional task with `nil` copied it first, which made this check cost 130 ns instead of 50.
    private static func callerPrefersNoExecutor() -> Bool {
        withUnsafeCurrentTask { task in
            guard let task else { return false }
            return task.unownedTaskExecutor == nil
        }
    }

    /// The executor that the task running ``load()`` prefers, or `nil` (the default) for Swift's global
    /// executor. A handler whose I/O completes on threads of its own (event loops) can name an executor
    /// over them, so that its task resumes where the I/O completed instead of waking another thread. Only
    /// for handlers whose `load()` never blocks: whatever it runs delays that executor's other work.
    open var loadExecutor: (any TaskExecutor)? { nil }

    /// Stops the load and releases what it holds. The default cancels the task running ``load()``.
    /// Safe to call more than once and at any point.
    open func stopLoading() {
        let previous = running.exchange(Self.stoppedMark, ordering: .acquiringAndReleasing)
        if previous != 0, previous != Self.stoppedMark { Self.releaseBox(previous).cancel() }
    }

    /// Whether ``stopLoading()`` has been called.
    public var isStopped: Bool { running.load(ordering: .acquiring) == Self.stoppedMark }

    /// The load, for handlers written as one `async` method: report the response and body through
    /// ``client`` and return. The default fails with ``LoadError/Code/unsupportedURL``.
    ///
    /// `@concurrent`: it runs in a task of its own on Swift's global executor (or the handler's
    /// ``loadExecutor``), never on the caller's actor or event loop. Started from a task already on the global
    /// executor, it begins on that task's thread, which waits for it anyway (see ``startLoading()``). A
    /// handler that blocks (reads a file) holds one of the global executor's threads, never its caller's.
    @concurrent open func load() async throws {
        throw LoadError(.unsupportedURL, url: request.url, reason: "\(type(of: self)) overrides neither load() nor startLoading()")
    }
}

/// Forwards every event unchanged and remembers whether a terminal one was sent, so that the base
/// class finishes a `load()` that returned without finishing, and never sends a second terminal event.
/// Only clients other than the loader's own are wrapped: the loader's knows this already.
final class TerminalTrackingClient: SchemeHandlerClient {
    let base: any SchemeHandlerClient
    private let terminated = Atomic<Bool>(false)

    init(wrapping base: any SchemeHandlerClient) {
        self.base = (base as? TerminalTrackingClient)?.base ?? base
    }

    var hasTerminated: Bool { terminated.load(ordering: .acquiring) }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) {
        base.handler(handler, didReceive: response)
    }

    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) {
        base.handler(handler, wasRedirectedTo: request, redirectResponse: response)
    }

    func handler(_ handler: SchemeHandler, didLoad data: Data) {
        base.handler(handler, didLoad: data)
    }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: Data, finished: Bool) {
        if finished { terminated.store(true, ordering: .releasing) }
        base.handler(handler, didReceive: response, body: body, finished: finished)
    }

    func handler(_ handler: SchemeHandler, deliver data: Data) async throws {
        try await base.handler(handler, deliver: data)
    }

    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) {
        base.handler(handler, whenReadyForData: callback)
    }

    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        base.handler(handler, didSendBodyData: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
    }

    func handler(_ handler: SchemeHandler, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        await base.handler(handler, didReceive: challenge)
    }

    var collectsMetrics: Bool { base.collectsMetrics }

    func handler(_ handler: SchemeHandler, didCollect transaction: LoadTransactionMetrics) {
        base.handler(handler, didCollect: transaction)
    }

    func handlerDidFinishLoading(_ handler: SchemeHandler) {
        terminated.store(true, ordering: .releasing)
        base.handlerDidFinishLoading(handler)
    }

    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) {
        terminated.store(true, ordering: .releasing)
        base.handler(handler, didFailWith: error)
    }
}
