import DequeModule
import FoundationEssentials
import Loader
import NIOCore
import NIOWebSocket

/// One open WebSocket: what the task calls (send, receive, ping, close) and what the channel's
/// ``WebSocketFrameHandler`` reports (messages, pongs, the close), meeting behind one lock.
final class WebSocketConnection: Sendable {
    let channel: any Channel
    let url: URL

    private struct State {
        var inbox = WebSocketInbox()
        var pings: Deque<CheckedContinuation<Void, any Error>> = []
        /// The code and reason of the close frame that ended the connection (the server's, or ours echoed).
        var closeCode: WebSocketTask.CloseCode?
        var closeReason: Data?
        /// Whether this end sent a close frame.
        var sentClose = false
    }
    private let state = Locked(State())

    init(channel: any Channel, url: URL) {
        self.channel = channel
        self.url = url
    }

    // MARK: The task's side

    /// The next message, waiting for one; throws once the connection has ended and every message is read.
    func receive() async throws -> WebSocketTask.Message {
        let message: WebSocketTask.Message = try await withCheckedThrowingContinuation { continuation in
            let now = state.withLock { $0.inbox.take(orWait: continuation) }
            switch now {
            case .success(let message)?: continuation.resume(returning: message)
            case .failure(let error)?: continuation.resume(throwing: error)
            case nil: break
            }
        }
        // A read held back for a full inbox goes ahead now that there is room (the frame handler checks again).
        channel.read()
        return message
    }

    /// Sends `message` as one frame; returns when it is written to the socket.
    func send(_ message: WebSocketTask.Message) async throws {
        let buffer: ByteBuffer
        let opcode: WebSocketOpcode
        switch message {
        case .string(let text):
            buffer = channel.allocator.buffer(string: text)
            opcode = .text
        case .data(let data):
            buffer = channel.allocator.buffer(bytes: data)
            opcode = .binary
        }
        try await write(WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: buffer), what: "the message")
    }

    /// Sends a ping and waits for the server's pong.
    func ping() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let finished = state.withLock { state -> LoadError? in
                if let ending = state.inbox.ending { return ending }
                state.pings.append(continuation)
                return nil
            }
            if let finished {
                continuation.resume(throwing: finished)
                return
            }
            let frame = WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: channel.allocator.buffer(string: "ping"))
            channel.writeAndFlush(frame).whenFailure { [self] error in
                ended(LoadError(.networkConnectionLost, url: url, reason: "the ping could not be sent", underlying: error), code: nil, reason: nil)
            }
        }
    }

    /// Sends a close frame with `code` and `reason` (once), waits up to `seconds` for the server's answer and
    /// the connection's end, then closes it whatever happened.
    func close(_ code: WebSocketTask.CloseCode, reason: Data?, waiting seconds: Double = 5) async {
        let first = state.withLock { state -> Bool in
            defer { state.sentClose = true }
            return !state.sentClose
        }
        if first, channel.isActive {
            var payload = channel.allocator.buffer(capacity: 2 + (reason?.count ?? 0))
            payload.writeInteger(UInt16(truncatingIfNeeded: code.rawValue))
            if let reason { payload.writeBytes(reason.prefix(123)) }
            try? await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload)).get()
        }
        let closed = channel.closeFuture
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { [channel] in channel.close(promise: nil) }
        try? await closed.get()
        timer.cancel()
        ended(LoadError(.cancelled, url: url, reason: "the WebSocket was closed by this end with \(code)"), code: code, reason: reason)
    }

    /// The close frame's code and reason, once the connection has closed with one.
    var closeInfo: (code: WebSocketTask.CloseCode?, reason: Data?) {
        state.withLock { ($0.closeCode, $0.closeReason) }
    }

    private func write(_ frame: WebSocketFrame, what: String) async throws {
        if let ending = state.withLock({ $0.inbox.ending }) { throw ending }
        do {
            try await channel.writeAndFlush(frame).get()
        } catch {
            if let ending = state.withLock({ $0.inbox.ending }) { throw ending }
            throw LoadError(.networkConnectionLost, url: url, reason: "\(what) could not be sent: the connection closed", underlying: error)
        }
    }

    // MARK: The channel's side (on its event loop)

    /// A message arrived; returns whether reads should wait for the reader.
    func received(_ message: WebSocketTask.Message) -> Bool {
        let (waiter, full) = state.withLock { ($0.inbox.deliver(message), $0.inbox.isFull) }
        waiter?.resume(returning: message)
        return full
    }

    /// Whether the reader is behind.
    var isFull: Bool { state.withLock { $0.inbox.isFull } }

    /// Whether this end has sent a close frame.
    var sentClose: Bool { state.withLock { $0.sentClose } }

    /// Notes that the frame handler answers the server's close frame itself.
    func markCloseSent() {
        state.withLock { $0.sentClose = true }
    }

    /// The server's pong: the oldest ping waiting is answered.
    func pong() {
        let waiter = state.withLock { $0.pings.popFirst() }
        waiter?.resume()
    }

    /// The connection ended (the first ending stands): every waiting call fails with `error`.
    func ended(_ error: LoadError, code: WebSocketTask.CloseCode?, reason: Data?) {
        let (waiters, pings) = state.withLock { state -> ([CheckedContinuation<WebSocketTask.Message, any Error>], [CheckedContinuation<Void, any Error>]) in
            if state.inbox.ending == nil {
                state.closeCode = code
                state.closeReason = reason
            }
            let waiters = state.inbox.end(error)
            defer { state.pings.removeAll() }
            return (waiters, Array(state.pings))
        }
        for waiter in waiters { waiter.resume(throwing: error) }
        for ping in pings { ping.resume(throwing: error) }
    }
}
