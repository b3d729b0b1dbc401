import DequeModule
import FoundationEssentials
import Loader

/// The messages a WebSocket received and the calls waiting for them, as a plain value: the connection keeps
/// it behind a lock and acts on what each change returns (resuming a waiter outside the lock).
struct WebSocketInbox {
    /// Reads stop while this many messages wait unread: a reader that falls behind slows the server.
    static let heldMessages = 16

    private var messages: Deque<WebSocketTask.Message> = []
    private var waiters: Deque<CheckedContinuation<WebSocketTask.Message, any Error>> = []
    /// The error every later `receive` gets, once the connection has ended.
    private(set) var ending: LoadError?

    /// Whether reads should wait for the reader.
    var isFull: Bool { messages.count >= Self.heldMessages }

    /// A message arrived: the waiter it goes to, if one waits.
    mutating func deliver(_ message: WebSocketTask.Message) -> CheckedContinuation<WebSocketTask.Message, any Error>? {
        guard ending == nil else { return nil }
        if let waiter = waiters.popFirst() { return waiter }
        messages.append(message)
        return nil
    }

    /// What a `receive` gets now: a message, the ending's error, or `nil` to wait (its continuation kept).
    mutating func take(orWait waiter: CheckedContinuation<WebSocketTask.Message, any Error>) -> Result<WebSocketTask.Message, LoadError>? {
        if let message = messages.popFirst() { return .success(message) }
        if let ending { return .failure(ending) }
        waiters.append(waiter)
        return nil
    }

    /// The connection ended with `error` (the first ending stands): the waiters to fail. Messages already
    /// received are still read first.
    mutating func end(_ error: LoadError) -> [CheckedContinuation<WebSocketTask.Message, any Error>] {
        guard ending == nil else { return [] }
        ending = error
        defer { waiters.removeAll() }
        return Array(waiters)
    }
}
