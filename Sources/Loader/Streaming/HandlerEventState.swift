import FoundationEssentials

/// The handler event contract and the body buffer, as a plain value.
///
/// Every transition takes the lock-free state and returns the ``Effects`` to perform once the lock is
/// released (resuming continuations, stopping the handler), so no foreign code ever runs under the lock.
/// Each waiter is held in one place and handed out in exactly one effect, so it is resumed exactly once:
/// the continuations are unsafe ones, sparing a checked one's allocation and atomic test on every wait.
/// Events that break the contract (a byte before the response, anything after the terminal event) are
/// recorded as violations; the load then fails with ``LoadError/Code/handlerContractViolation``.
struct HandlerEventState {
    enum Head {
        case waiting
        case received(LoadResponse, redirect: LoadRequest?)
        case delivered
    }

    enum Terminal {
        case finished
        case failed(LoadError)
    }

    /// Whether the handler has been started and stopped; `stopLoading` is sent exactly once.
    enum Lifecycle {
        case idle
        case starting
        case running
        case stopDeferredUntilStarted
        case stopped
    }

    /// What the caller of a transition must do after unlocking.
    struct Effects {
        /// The reader waiting for the head, to wake: it takes the head (or the error) itself
        /// (``takeResponse()``), so that neither travels through the continuation into its async frame.
        var response: UnsafeContinuation<Void, Never>?
        var consumer: (UnsafeContinuation<Data?, any Error>, Result<Data?, LoadError>)?
        var producers: [UnsafeContinuation<Void, any Error>] = []
        var producerError: LoadError?
        var readyCallbacks: [@Sendable () -> Void] = []
        var stopHandler = false

        static var none: Effects { Effects() }

        /// Adds the effects of a later event of the same batch (each waiter is in at most one of them).
        mutating func merge(_ other: Effects) {
            assert(response == nil || other.response == nil, "two response waiters in one batch")
            assert(consumer == nil || other.consumer == nil, "two chunk waiters in one batch")
            if response == nil { response = other.response }
            if consumer == nil { consumer = other.consumer }
            producers += other.producers
            if producerError == nil { producerError = other.producerError }
            readyCallbacks += other.readyCallbacks
            stopHandler = stopHandler || other.stopHandler
        }
    }

    /// What an attempt to read a chunk without waiting found.
    enum Poll {
        case chunk(Data)
        case end
        case failure(LoadError)
        case empty
    }

    let url: URL
    let highWatermark: Int
    let lowWatermark: Int
    private(set) var head: Head = .waiting
    private(set) var terminal: Terminal?
    private(set) var lifecycle: Lifecycle = .idle
    private(set) var violations: [String] = []
    private(set) var bufferedBytes = 0
    /// When an event or a read last happened, for the idle timeout.
    private(set) var lastActivity: UInt64 = Watchdog.now()
    private var chunks = ChunkQueue()
    private var responseWaiter: UnsafeContinuation<Void, Never>?
    private var consumerWaiter: UnsafeContinuation<Data?, any Error>?
    private var producerWaiters: [UnsafeContinuation<Void, any Error>] = []
    private var readyCallbacks: [@Sendable () -> Void] = []

    init(url: URL, highWatermark: Int) {
        self.url = url
        self.highWatermark = max(1, highWatermark)
        self.lowWatermark = max(1, highWatermark / 2)
    }

    var isTerminated: Bool { terminal != nil }

    /// Whether a reader waiting for the head would be woken at once: the head came, or the load ended.
    var hasResponseOrEnd: Bool {
        if case .waiting = head { return terminal != nil }
        return true
    }

    /// Whether the consumer, not the handler, is what the load waits for (its buffer is non-empty).
    var isWaitingForConsumer: Bool { !chunks.isEmpty }

    // MARK: Lifecycle

    mutating func willStart() -> Bool {
        guard case .idle = lifecycle else { return false }
        lifecycle = .starting
        return true
    }

    /// Returns whether a stop requested during `startLoading` must be sent now.
    mutating func didStart() -> Bool {
        switch lifecycle {
        case .starting:
            lifecycle = .running
            return false
        case .stopDeferredUntilStarted:
            lifecycle = .stopped
            return true
        default:
            return false
        }
    }

    /// Stops the handler once; during `startLoading` the stop waits until it returns.
    private mutating func requestStop(_ effects: inout Effects) {
        switch lifecycle {
        case .running:
            lifecycle = .stopped
            effects.stopHandler = true
        case .starting:
            lifecycle = .stopDeferredUntilStarted
        case .idle:
            lifecycle = .stopped
        case .stopDeferredUntilStarted, .stopped:
            break
        }
    }

    // MARK: Handler events

    mutating func receiveResponse(_ response: LoadResponse, redirect: LoadRequest?) -> Effects {
        guard terminal == nil else { return violation("response after the terminal event") }
        guard case .waiting = head else {
            return fail(contract: "a second response (a handler reports one response per load)")
        }
        touch()
        head = .received(response, redirect: redirect)
        guard let waiter = responseWaiter else { return .none }
        responseWaiter = nil
        var effects = Effects()
        effects.response = waiter
        return effects
    }

    /// The body bytes taken from the handler, for the transaction's metrics.
    private(set) var receivedBytes: Int64 = 0

    mutating func receiveData(_ data: Data) -> Effects {
        guard terminal == nil else { return violation("data after the terminal event") }
        if case .waiting = head { return fail(contract: "body data before the response") }
        touch()
        guard !data.isEmpty else { return .none }
        receivedBytes += Int64(data.count)
        if let waiter = consumerWaiter {
            consumerWaiter = nil
            var effects = Effects()
            effects.consumer = (waiter, .success(data))
            return effects
        }
        chunks.append(data)
        bufferedBytes += data.count
        return .none
    }

    mutating func receiveFinish() -> Effects {
        guard terminal == nil else { return violation("a second terminal event") }
        if case .waiting = head { return fail(contract: "finished without a response") }
        touch()
        terminal = .finished
        var effects = Effects()
        if let waiter = consumerWaiter {
            consumerWaiter = nil
            effects.consumer = (waiter, .success(nil))
        }
        releaseProducers(&effects, error: nil)
        requestStop(&effects)
        return effects
    }

    mutating func receiveFailure(_ error: LoadError) -> Effects {
        guard terminal == nil else { return violation("a second terminal event") }
        return terminate(with: error, discardBuffered: false)
    }

    // MARK: Loader side

    /// Ends the load from the loader's side (cancellation, timeout, a consumer that went away).
    /// Cancellation discards what is buffered; a timeout keeps it so the reader sees every byte before the error.
    /// A load that had finished with bytes still unread then ends with the cancellation instead: its reader
    /// must not take the rest of the body for its end.
    mutating func cancel(with error: LoadError) -> Effects {
        if terminal != nil {
            var effects = Effects()
            if error.code == .cancelled, !chunks.isEmpty {
                chunks.removeAll()
                bufferedBytes = 0
                if case .finished? = terminal { terminal = .failed(error) }
            }
            requestStop(&effects)
            return effects
        }
        return terminate(with: error, discardBuffered: error.code == .cancelled)
    }

    /// The reader waits for the head, or the load's end without one; it is woken at once if either came.
    mutating func awaitResponse(_ waiter: UnsafeContinuation<Void, Never>) -> Effects {
        var effects = Effects()
        if hasResponseOrEnd {
            effects.response = waiter
        } else {
            responseWaiter = waiter
        }
        return effects
    }

    /// The response head if it has come (it is then delivered), the load's error if it failed first, or
    /// `nil` while neither has happened.
    mutating func takeResponse() -> Result<(LoadResponse, LoadRequest?), LoadError>? {
        switch head {
        case .received(let response, let redirect):
            head = .delivered
            return .success((response, redirect))
        case .waiting:
            if case .failed(let error) = terminal { return .failure(error) }
            return nil
        case .delivered:
            return .failure(LoadError(.unknown, url: url, reason: "the response was already taken"))
        }
    }

    /// The whole body, once the handler has finished and the buffer holds it in one chunk or none: the
    /// reader then needs nothing more from the load. `nil` while more may come, after a failure (the
    /// reader sees the buffered chunks before the error), or with several chunks held (joining copies).
    mutating func takeWholeBody() -> Data? {
        guard case .finished? = terminal, chunks.holdsOneAtMost else { return nil }
        bufferedBytes = 0
        return chunks.popFirst() ?? Data()
    }

    mutating func poll(_ effects: inout Effects) -> Poll {
        touch()
        if let chunk = chunks.popFirst() {
            bufferedBytes -= chunk.count
            if bufferedBytes <= lowWatermark { releaseProducers(&effects, error: nil) }
            return .chunk(chunk)
        }
        switch terminal {
        case .finished?: return .end
        case .failed(let error)?: return .failure(error)
        case nil:
            // The buffer is empty: a producer waiting for room may go on.
            releaseProducers(&effects, error: nil)
            return .empty
        }
    }

    mutating func awaitChunk(_ waiter: UnsafeContinuation<Data?, any Error>) -> Effects {
        var effects = Effects()
        switch poll(&effects) {
        case .chunk(let data): effects.consumer = (waiter, .success(data))
        case .end: effects.consumer = (waiter, .success(nil))
        case .failure(let error): effects.consumer = (waiter, .failure(error))
        case .empty:
            if consumerWaiter != nil {
                effects.consumer = (waiter, .failure(LoadError(.unknown, url: url, reason: "a response body was read by two readers at once")))
            } else {
                consumerWaiter = waiter
            }
        }
        return effects
    }

    /// A producer asks to wait until the buffer has room; it may go on at once.
    mutating func awaitRoom(_ waiter: UnsafeContinuation<Void, any Error>) -> Effects {
        var effects = Effects()
        if case .failed(let error) = terminal {
            effects.producers = [waiter]
            effects.producerError = error
        } else if terminal != nil || bufferedBytes <= highWatermark {
            effects.producers = [waiter]
        } else {
            producerWaiters.append(waiter)
        }
        return effects
    }

    /// Registers a callback for when the buffer has room, unless there is room now: then it returns
    /// `true` and the caller calls it (usually so, and without the array an effect would need).
    mutating func whenRoom(_ callback: @escaping @Sendable () -> Void) -> Bool {
        if terminal != nil || bufferedBytes <= highWatermark { return true }
        readyCallbacks.append(callback)
        return false
    }

    var hasRoom: Bool { bufferedBytes <= highWatermark }

    /// Request body bytes went out: the load is not idle, whatever its response is doing.
    mutating func noteUploadProgress() {
        touch()
    }

    // MARK: Helpers

    private mutating func touch() {
        lastActivity = Watchdog.now()
    }

    private mutating func violation(_ what: String) -> Effects {
        violations.append(what)
        return .none
    }

    private mutating func fail(contract what: String) -> Effects {
        violations.append(what)
        return terminate(
            with: LoadError(.handlerContractViolation, url: url, reason: "the handler sent \(what)"),
            discardBuffered: true
        )
    }

    private mutating func terminate(with error: LoadError, discardBuffered: Bool) -> Effects {
        terminal = .failed(error)
        var effects = Effects()
        if discardBuffered {
            chunks.removeAll()
            bufferedBytes = 0
        }
        if let waiter = responseWaiter {
            responseWaiter = nil
            effects.response = waiter
        }
        if let waiter = consumerWaiter {
            consumerWaiter = nil
            effects.consumer = (waiter, .failure(error))
        }
        releaseProducers(&effects, error: error)
        requestStop(&effects)
        return effects
    }

    private mutating func releaseProducers(_ effects: inout Effects, error: LoadError?) {
        if !producerWaiters.isEmpty {
            effects.producers += producerWaiters
            effects.producerError = error
            producerWaiters.removeAll()
        }
        if !readyCallbacks.isEmpty {
            effects.readyCallbacks += readyCallbacks
            readyCallbacks.removeAll()
        }
    }
}
