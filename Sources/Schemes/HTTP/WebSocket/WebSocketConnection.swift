import DequeModule
import FoundationEssentials
import Loader
import NIOCore
import NIOWebSocket
import Synchronization

/// One open WebSocket: what the task calls (send, receive, ping, close) and what the channel's
/// ``WebSocketFrameHandler`` reports (messages, pongs, the close), meeting behind one lock.
final class WebSocketConnection: Sendable {
    let channel: any Channel
    let url: URL
    /// How long a close waits for the server's answer.
    static let patience: TimeAmount = .seconds(5)
    /// How long a ping waits for its pong with nothing heard from the server: the request timeout, a minute at most (a
    /// busy server may answer late; one that says nothing that long is gone).
    let pongPatience: TimeAmount

    private struct State {
        var inbox = WebSocketInbox()
        var nextWaiter = 0
        /// The pings waiting for their pongs, oldest first, each with the payload it was sent with.
        var pings: Deque<(payload: String, continuation: CheckedContinuation<Void, any Error>)> = []
        var pingsSent = 0
        /// The code and reason of the close frame that ended the connection (the server's, or the one this end sent).
        var closeCode: WebSocketTask.CloseCode?
        var closeReason: Data?
        /// Whether this end sent a close frame: no frame but a pong may follow it (RFC 6455 §5.5.1).
        var sentClose = false
        /// Who hears of the end, once (``whenEnded(_:)``), until then.
        var endListener: (@Sendable (WebSocketTask.CloseCode?, Data?) -> Void)?
    }
    private let state = Locked(State())

    init(channel: any Channel, url: URL, pongPatience: TimeAmount) {
        self.channel = channel
        self.url = url
        self.pongPatience = pongPatience
    }

    // MARK: The task's side

    /// The next message, waiting for one; throws once the connection has ended and every message is read, or
    /// when the calling task is cancelled (the socket stays open).
    func receive() async throws -> WebSocketTask.Message {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let message: WebSocketTask.Message = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let now = state.withLock { $0.inbox.take(orWait: continuation, id: id) }
                switch now {
                case .success(let message)?: continuation.resume(returning: message)
                case .failure(let error)?: continuation.resume(throwing: error)
                case nil:
                    // Cancelled before the wait was registered (while the socket opened, say): the handler below ran
                    // first and found nothing to withdraw, and nothing else would end this wait.
                    if Task.isCancelled, let waiter = state.withLock({ $0.inbox.withdraw(id) }) {
                        waiter.resume(throwing: LoadError(.cancelled, url: url, reason: "receive was cancelled"))
                    }
                }
            }
        } onCancel: { [self] in
            state.withLock { $0.inbox.withdraw(id) }?.resume(throwing: LoadError(.cancelled, url: url, reason: "receive was cancelled"))
        }
        // A read held back for a full inbox goes ahead now that there is room (the frame handler checks again).
        channel.read()
        return message
    }

    /// Sends `message` as one frame; returns when it is written to the socket.
    func send(_ message: WebSocketTask.Message) async throws {
        let frame: WebSocketFrame
        switch message {
        case .string(let text):
            frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(string: text))
        case .data(let data):
            frame = WebSocketFrame(fin: true, opcode: .binary, maskKey: .random(), data: channel.allocator.buffer(bytes: data))
        }
        try await write(frame, what: "the message")
    }

    /// Sends a ping and waits for a pong, up to ``pongPatience`` from when the ping is written (it may wait behind a large
    /// message of ours) or from the server's latest frame (its pong may come behind what it sends): a connection that
    /// stays silent that long is closed. Cancelling the calling task ends the wait
    /// (a pong that comes later answers nothing).
    func ping() async throws {
        try checkOpen()
        let id = state.withLock { state -> Int in
            state.pingsSent += 1
            return state.pingsSent
        }
        // Its own payload: a pong answers the ping it echoes (and those before it), not any ping.
        let payload = "ping \(id)"
        let cancelled = LoadError(.cancelled, url: url, reason: "the ping was cancelled")
        let timer = Locked<Scheduled<Void>?>(nil)
        defer { timer.withLock { $0 }?.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let refusal = state.withLock { state -> LoadError? in
                    if let ending = state.inbox.ending { return ending }
                    if Task.isCancelled { return cancelled }
                    state.pings.append((payload, continuation))
                    return nil
                }
                if let refusal { return continuation.resume(throwing: refusal) }
                let frame = WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: channel.allocator.buffer(string: payload))
                channel.writeAndFlush(frame).whenComplete { [self] written in
                    switch written {
                    case .success:
                        // The clock starts once the ping is out.
                        armPingClock(payload, in: pongPatience, timer: timer)
                    case .failure(let error):
                        ended(LoadError(.networkConnectionLost, url: url, reason: "the ping could not be sent", underlying: error), code: .abnormalClosure, reason: nil)
                    }
                }
                // Reads held for a full inbox go on while a pong is awaited (``awaitsPong``): it comes after those messages.
                channel.read()
            }
        } onCancel: { [self] in
            let withdrawn = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.pings.firstIndex(where: { $0.payload == payload }) else { return nil }
                return state.pings.remove(at: index).continuation
            }
            withdrawn?.resume(throwing: cancelled)
        }
    }

    /// Closes the connection when the ping of `payload` still has no pong `delay` from now, unless the server sent
    /// anything meanwhile: then the clock runs again from then (its pong may come behind what it is sending).
    private func armPingClock(_ payload: String, in delay: TimeAmount, timer: Locked<Scheduled<Void>?>) {
        let scheduled = channel.eventLoop.scheduleTask(in: delay) { [self] in
            guard state.withLock({ $0.pings.contains { $0.payload == payload } }) else { return }
            let now = NIODeadline.now().uptimeNanoseconds
            let quiet = now - min(now, lastHeard.load(ordering: .relaxed))
            if quiet < UInt64(pongPatience.nanoseconds) {
                return armPingClock(payload, in: pongPatience - .nanoseconds(Int64(quiet)), timer: timer)
            }
            let seconds = Double(pongPatience.nanoseconds) / 1e9
            ended(LoadError(.timedOut, url: url, reason: "no pong within \(seconds.printed("%g")) s (the request timeout) of a ping, nor anything else from the server"),
                  code: .abnormalClosure, reason: nil)
            channel.close(promise: nil)
        }
        timer.withLock { $0 = scheduled }
        // Ended meanwhile (a pong already in, a cancel): no clock.
        if !state.withLock({ $0.pings.contains { $0.payload == payload } }) { scheduled.cancel() }
    }

    /// When a frame last came from the server (``NIODeadline`` nanoseconds).
    private let lastHeard = Atomic<UInt64>(0)

    /// A frame came from the server (on the event loop): a ping's clock runs from here.
    func heardFromServer() {
        lastHeard.store(NIODeadline.now().uptimeNanoseconds, ordering: .relaxed)
    }

    /// Ends the socket from this end: every waiting call fails with `cancelled` and ``closeCode`` is `code`; a
    /// close frame with `code` and `reason` goes out (once), and the connection closes when the server has
    /// answered and closed it, or after ``patience`` whatever happened (a server that reads nothing included).
    func close(_ code: WebSocketTask.CloseCode, reason: Data?) async {
        ended(LoadError(.cancelled, url: url, reason: "the WebSocket was closed by this end with \(code)"), code: code, reason: reason)
        let timer = channel.eventLoop.scheduleTask(in: Self.patience) { [channel] in channel.close(promise: nil) }
        if claimClose(), channel.isActive {
            // A code no frame may carry (1005, 1006, 1015 …) goes as a close frame without one, and so without a reason.
            var payload = channel.allocator.buffer(capacity: 2 + (reason?.count ?? 0))
            if code.maySend {
                payload.writeInteger(UInt16(code.rawValue))
                if let reason = reason.flatMap(Self.sendable) { payload.writeBytes(reason) }
            }
            // Not awaited: a server that reads nothing would hold the write, and the close with it.
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload), promise: nil)
            // Reads held for a full inbox go on (a closing socket holds none): the server's answering close is read.
            channel.read()
        }
        try? await channel.closeFuture.get()
        timer.cancel()
    }

    /// `reason` as a close frame may carry it (RFC 6455 §5.5 and §7.4.1): UTF-8 (else none), at most 123 bytes, cut
    /// where a character begins.
    static func sendable(_ reason: Data) -> Data? {
        guard String(validating: reason, as: UTF8.self) != nil else { return nil }
        var end = min(reason.count, 123)
        // A UTF-8 continuation byte (10xxxxxx) at the cut belongs to the character before it.
        while end < reason.count, end > 0, reason[reason.startIndex + end] & 0xC0 == 0x80 { end -= 1 }
        return reason.prefix(end)
    }

    /// The close frame's code and reason, once the connection has closed with one.
    var closeInfo: (code: WebSocketTask.CloseCode?, reason: Data?) {
        state.withLock { ($0.closeCode, $0.closeReason) }
    }

    private func checkOpen() throws {
        let refusal = state.withLock { state -> LoadError? in
            if let ending = state.inbox.ending { return ending }
            return state.sentClose ? LoadError(.networkConnectionLost, url: url, reason: "the WebSocket is closing") : nil
        }
        if let refusal { throw refusal }
    }

    /// Queues `frame` and waits until it is written. Cancelling the calling task ends the wait with `cancelled`; the
    /// frame goes out whole all the same (one cut short would break the connection). A task cancelled before the call
    /// sends nothing.
    private func write(_ frame: WebSocketFrame, what: String) async throws {
        try checkOpen()
        // Made only when a cancel comes, not on every send.
        let url = url
        let cancelled: @Sendable () -> LoadError = { LoadError(.cancelled, url: url, reason: "the wait for \(what) to be sent was cancelled") }
        guard !Task.isCancelled else { throw cancelled() }
        let written = channel.eventLoop.makePromise(of: Void.self)
        // Checked on the event loop, where the close frame is queued too: no message goes out after it (RFC 6455
        // §5.5.1), whichever call came first.
        channel.eventLoop.execute { [self] in
            guard !state.withLock({ $0.sentClose }) else {
                return written.fail(LoadError(.networkConnectionLost, url: url, reason: "\(what) was not sent: the WebSocket is closing"))
            }
            channel.writeAndFlush(frame, promise: written)
        }
        do {
            // A promise completes once: the write's outcome or the cancel, whichever comes first.
            try await withTaskCancellationHandler {
                try await written.futureResult.get()
            } onCancel: {
                written.fail(cancelled())
            }
        } catch {
            if let ending = state.withLock({ $0.inbox.ending }) { throw ending }
            if let error = error as? LoadError { throw error }
            throw LoadError(.networkConnectionLost, url: url, reason: "\(what) could not be sent: the connection closed", underlying: error)
        }
    }

    // MARK: The channel's side (on its event loop)

    /// A message arrived.
    func received(_ message: WebSocketTask.Message) {
        state.withLock { $0.inbox.deliver(message) }?.resume(returning: message)
    }

    /// Whether reads should wait for the reader: the inbox is full and the socket still open (a closing one
    /// reads on, to hear the server's close).
    var holdsReads: Bool {
        state.withLock { $0.inbox.isFull && !$0.sentClose && $0.inbox.ending == nil }
    }

    /// Whether a ping waits for its pong: reads held for the reader go on for it, the messages before it held
    /// compressed (``PerMessageDeflateHandler``), up to a bound.
    var awaitsPong: Bool {
        state.withLock { !$0.pings.isEmpty }
    }

    /// Whether this end may still send its close frame; if so, it counts as sent from now on (one check and
    /// set, so that the task's close and the frame handler's answer never both send one).
    func claimClose() -> Bool {
        state.withLock { state in
            defer { state.sentClose = true }
            return !state.sentClose
        }
    }

    /// The server's pong, with `payload`: the ping it echoes is answered, and those sent before it (RFC 6455 §5.5.3
    /// lets a server answer only the latest of several). A pong that echoes no waiting ping (unasked) answers none.
    func pong(_ payload: ByteBuffer) {
        let text = String(buffer: payload)
        let answered = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard let index = state.pings.firstIndex(where: { $0.payload == text }) else { return [] }
            defer { state.pings.removeFirst(index + 1) }
            return state.pings.prefix(index + 1).map(\.continuation)
        }
        for ping in answered { ping.resume() }
    }

    /// Calls `tell` once with the close code and reason when the connection ends, or now if it has ended already.
    func whenEnded(_ tell: @escaping @Sendable (WebSocketTask.CloseCode?, Data?) -> Void) {
        let endedWith = state.withLock { state -> (WebSocketTask.CloseCode?, Data?)? in
            guard state.inbox.ending != nil else {
                state.endListener = tell
                return nil
            }
            return (state.closeCode, state.closeReason)
        }
        if let (code, reason) = endedWith { tell(code, reason) }
    }

    /// The connection ended (the first ending stands, with its close code): every waiting call fails with `error`.
    func ended(_ error: LoadError, code: WebSocketTask.CloseCode?, reason: Data?) {
        var listener: (@Sendable (WebSocketTask.CloseCode?, Data?) -> Void)?
        let (waiters, pings) = state.withLock { state -> ([WebSocketInbox.Waiter], [CheckedContinuation<Void, any Error>]) in
            if state.inbox.ending == nil {
                state.closeCode = code
                state.closeReason = reason
                listener = state.endListener
                state.endListener = nil
            }
            let waiters = state.inbox.end(error)
            defer { state.pings.removeAll() }
            // Not `Array(state.pings)` when empty: the Deque's copy into an array then writes the count of the
            // standard library's shared empty-array storage, a write the thread sanitizer reports as a race when
            // two connections end at once on two event loops (harmless, both write 0, but a failed run).
            return (waiters, state.pings.isEmpty ? [] : state.pings.map(\.continuation))
        }
        for waiter in waiters { waiter.resume(throwing: error) }
        for ping in pings { ping.resume(throwing: error) }
        listener?(code, reason)
    }
}
