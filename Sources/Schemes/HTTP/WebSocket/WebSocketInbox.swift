import DequeModule
import FoundationEssentials
import Loader

/// The messages a WebSocket received and the calls waiting for them, as a plain value: the connection keeps
/// it behind a lock and acts on what each change returns (resuming a waiter outside the lock).
struct WebSocketInbox {
    /// Reads stop while this many messages wait unread: a reader that falls behind slows the server (one read
    /// may still bring several messages past it).
    static let heldMessages = 16

    typealias Waiter = CheckedContinuation<WebSocketTask.Message, any Error>

    private var messages: Deque<WebSocketTask.Message> = []
    /// The calls waiting for a message, oldest first, each with the number its caller may withdraw it by.
    private var waiters: Deque<(id: Int, continuation: Waiter)> = []
    /// The error every later `receive` gets, once the connection has ended.
    private(set) var ending: LoadError?

    /// Whether reads should wait for the reader.
    var isFull: Bool { messages.count >= Self.heldMessages }

    /// A message arrived: the waiter it goes to, if one waits.
    mutating func deliver(_ message: WebSocketTask.Message) -> Waiter? {
        guard ending == nil else { return nil }
        if let waiter = waiters.popFirst() { return waiter.continuation }
        messages.append(message)
        return nil
    }

    /// What a `receive` gets now: a message, the ending's error, or `nil` to wait (its continuation kept under `id`).
    mutating func take(orWait waiter: Waiter, id: Int) -> Result<WebSocketTask.Message, LoadError>? {
        if let message = messages.popFirst() { return .success(message) }
        if let ending { return .failure(ending) }
        waiters.append((id, waiter))
        return nil
    }

    /// The waiter kept under `id`, taken out (its caller was cancelled); `nil` if a message or the end took it.
    mutating func withdraw(_ id: Int) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).continuation
    }

    /// The connection ended with `error` (the first ending stands): the waiters to fail. Messages already
    /// received are still read first, unless this end cancelled (`cancelled`): as URLSession's, a `receive` after
    /// `cancel(with:reason:)` fails.
    mutating func end(_ error: LoadError) -> [Waiter] {
        guard ending == nil else { return [] }
        ending = error
        if error.code == .cancelled { messages.removeAll() }
        defer { waiters.removeAll() }
        return waiters.map(\.continuation)
    }
}
