import Foundation
import Loader
import Synchronization

/// A client that records a handler's raw events, so the suite can check their order directly, without
/// the loader's own enforcement in between.
final class RecordingClient: SchemeHandlerClient {
    enum Event: Sendable {
        case response(LoadResponse)
        case redirect(LoadRequest, LoadResponse)
        case data(count: Int)
        case finish
        case failure(LoadError)
        /// A transaction's metrics (``SchemeHandlerClient/handler(_:didCollect:)``).
        case transaction

        /// Whether it is a transaction's metrics.
        var isTransaction: Bool {
            if case .transaction = self { return true } else { return false }
        }

        var isTerminal: Bool {
            switch self {
            case .finish, .failure: return true
            default: return false
            }
        }

        var name: String {
            switch self {
            case .response: return "response"
            case .redirect: return "redirect"
            case .data(let count): return "data(\(count) bytes)"
            case .finish: return "finish"
            case .failure(let error): return "failure(\(error.code))"
            case .transaction: return "transaction"
            }
        }
    }

    struct Recorded: Sendable {
        let event: Event
        let at: UInt64
    }

    private let log = Locked<[Recorded]>([])
    private let bodyStore = Locked(Data())
    /// Whether body bytes are kept (not for the large fixture).
    let keepsBody: Bool

    /// When set, the client holds the handler back once this many body bytes have arrived, as a reader that
    /// stopped reading would: `deliver` waits and a `whenReadyForData` callback is kept, until the load is
    /// stopped. The stop checks use it so that a stop lands while the handler still has a body to send,
    /// however fast it is.
    let holdsAfter: Int?
    private let hold = Locked(Hold())

    private struct Hold {
        var bytes = 0
        var deliveries: [CheckedContinuation<Void, Never>] = []
        var callbacks: [@Sendable () -> Void] = []
    }

    /// Whether the handler is told to report transaction metrics (as the loader tells it for a task with a delegate).
    let collectsMetrics: Bool

    /// Whether each report lingers (the client sleeps in it for a moment) so that a handler whose calls overlap is
    /// caught at it: a report that begins while another is still running is noted in ``overlaps``.
    let lingers: Bool
    /// How many reports are running now.
    private let reporting = Atomic<Int>(0)
    private let overlapping = Locked<[String]>([])

    init(keepsBody: Bool = true, holdsAfter: Int? = nil, collectsMetrics: Bool = false, lingers: Bool = false) {
        self.keepsBody = keepsBody
        self.holdsAfter = holdsAfter
        self.collectsMetrics = collectsMetrics
        self.lingers = lingers
    }

    /// The reports that began while another was running (by method), in order.
    var overlaps: [String] { overlapping.withLock { $0 } }

    /// Runs one report of the handler's, noting it if another is running.
    private func report(_ method: String, _ body: () -> Void) {
        if reporting.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue > 0 { overlapping.withLock { $0.append(method) } }
        defer { reporting.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        body()
        if lingers { usleep(2000) }
    }

    /// The body bytes received, in order (empty unless `keepsBody`).
    var body: Data { bodyStore.withLock { $0 } }
    private let terminal = Locked<CheckedContinuation<Void, Never>?>(nil)
    private let terminated = Atomic<Bool>(false)

    var events: [Recorded] { log.withLock { $0 } }

    private func record(_ event: Event) {
        log.withLock { $0.append(Recorded(event: event, at: DispatchTime.now().uptimeNanoseconds)) }
        if event.isTerminal, !terminated.exchange(true, ordering: .acquiringAndReleasing) {
            terminal.withLock { $0.take() }?.resume()
        }
    }

    /// Waits up to `seconds` for the first terminal event; returns whether it came.
    func waitForTerminal(seconds: TimeInterval) async -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < deadline {
            if terminated.load(ordering: .acquiring) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return terminated.load(ordering: .acquiring)
    }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) { report("didReceive(response)") { record(.response(response)) } }
    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) {
        report("wasRedirectedTo") { record(.redirect(request, response)) }
    }
    func handler(_ handler: SchemeHandler, didLoad data: Data) { report("didLoad") { received(data) } }
    func handler(_ handler: SchemeHandler, deliver data: Data) async throws {
        // As the loader's own client: once the load has ended or been stopped, deliver throws, which is how a
        // handler written to the documented contract learns to stop.
        if terminated.load(ordering: .acquiring) {
            report("deliver") { received(data) }
            throw LoadError(.cancelled, url: handler.request.url, reason: "the load has ended")
        }
        if stopped.load(ordering: .acquiring) {
            // The first refused delivery after a stop is how such a handler learns of it, however late its task got
            // to run (on a loaded machine, seconds): not an event. Another is one that ignored the throw.
            if refusedAfterStop.wrappingAdd(1, ordering: .relaxed).oldValue > 0 { report("deliver") { received(data) } }
            throw LoadError(.cancelled, url: handler.request.url, reason: "the load was stopped")
        }
        // The report itself; a wait for room that may follow is not one (the handler waits in it, calling nothing).
        report("deliver") { received(data) }
        guard isHolding else { return }
        await withCheckedContinuation { waiter in
            let now = hold.withLock { hold -> Bool in
                if stopped.load(ordering: .acquiring) { return true }
                hold.deliveries.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
        throw LoadError(.cancelled, url: handler.request.url, reason: "the load was stopped")
    }

    /// Marks the load stopped (``SchemeHandler/stopLoading()`` was called): later deliveries throw, and a
    /// handler held back is let go, as the loader lets it go (its waiting `deliver` throws, its ready
    /// callbacks run).
    func markStopped() {
        stopped.store(true, ordering: .releasing)
        let held = hold.withLock { hold in
            defer { hold.deliveries = []; hold.callbacks = [] }
            return (hold.deliveries, hold.callbacks)
        }
        held.0.forEach { $0.resume() }
        held.1.forEach { $0() }
    }
    private let stopped = Atomic<Bool>(false)
    /// Deliveries refused since the stop (see ``handler(_:deliver:)``).
    private let refusedAfterStop = Atomic<Int>(0)

    /// Whether the client is now holding the handler back (see ``holdsAfter``).
    private var isHolding: Bool {
        guard let holdsAfter else { return false }
        return hold.withLock { $0.bytes } >= holdsAfter
    }

    private func received(_ data: Data) {
        if keepsBody { bodyStore.withLock { $0.append(data) } }
        if holdsAfter != nil { hold.withLock { $0.bytes += data.count } }
        record(.data(count: data.count))
    }
    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) {
        let now = !isHolding || hold.withLock { hold -> Bool in
            if stopped.load(ordering: .acquiring) { return true }
            hold.callbacks.append(callback)
            return false
        }
        if now { callback() }
    }
    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        report("didSendBodyData") {}
    }
    func handler(_ handler: SchemeHandler, didCollect transaction: LoadTransactionMetrics) { report("didCollect") { record(.transaction) } }
    func handlerDidFinishLoading(_ handler: SchemeHandler) { report("handlerDidFinishLoading") { record(.finish) } }
    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) { report("didFailWith") { record(.failure(error)) } }
}

/// One handler instance driven directly, as the loader would, with its events recorded; its `startLoading()` and
/// `stopLoading()` are called through `calls`, which bounds them.
struct DirectLoad {
    let handler: SchemeHandler
    let client: RecordingClient
    let calls: HandlerCalls

    /// A load of `url` carrying `options` (the fixtures' ``ConformanceFixtures/handlerOptions``).
    init(_ handlerClass: SchemeHandler.Type, url: URL, options: HandlerOptions, calls: HandlerCalls, keepsBody: Bool = true,
         holdsAfter: Int? = nil, collectsMetrics: Bool = false, lingers: Bool = false) {
        let client = RecordingClient(keepsBody: keepsBody, holdsAfter: holdsAfter, collectsMetrics: collectsMetrics, lingers: lingers)
        var given = LoadRequest(url: url)
        given.options = options
        let request = handlerClass.canonicalRequest(for: given)
        self.client = client
        self.calls = calls
        self.handler = handlerClass.init(request: request, cachedResponse: nil, client: client)
    }

    /// Starts a load, waits for its end (or `timeout`), stops it as the loader does, and lets late
    /// events arrive for a moment.
    static func run(_ handlerClass: SchemeHandler.Type, url: URL, fixtures: ConformanceFixtures, calls: HandlerCalls,
                    collectsMetrics: Bool = false) async -> (events: [RecordingClient.Event], body: Data, ended: Bool) {
        await DirectLoad(handlerClass, url: url, options: fixtures.handlerOptions, calls: calls, collectsMetrics: collectsMetrics)
            .run(timeout: fixtures.timeout)
    }

    /// Starts this load, waits for its end (or `timeout`), stops it as the loader does, and lets late
    /// events arrive for a moment. A start that never returns is a load with no events.
    func run(timeout: TimeInterval) async -> (events: [RecordingClient.Event], body: Data, ended: Bool) {
        guard await start() else { return ([], Data(), false) }
        let ended = await client.waitForTerminal(seconds: timeout)
        // A moment for events that follow the terminal one, then stop as the loader does. Events that
        // stopLoading() itself causes are the stop checks' business, not the event checks'.
        try? await Task.sleep(for: .milliseconds(100))
        let events = client.events.map(\.event)
        let body = client.body
        await stop()
        return (events, body, ended)
    }

    /// Starts the load; whether `startLoading()` returned (see ``HandlerCalls``).
    func start() async -> Bool {
        await calls.start(handler)
    }

    /// Stops the load as the loader does: from then on the client's `deliver` throws. Returns how long
    /// `stopLoading()` took, or `nil` if it did not return (see ``HandlerCalls``).
    @discardableResult
    func stop() async -> HandlerCalls.Timing? {
        client.markStopped()
        return await calls.stop(handler)
    }
}
