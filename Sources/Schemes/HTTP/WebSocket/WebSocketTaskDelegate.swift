import FoundationEssentials

/// Hears a ``WebSocketTask`` open and close, as URLSession's web socket delegate does.
///
/// Set one as a task's ``WebSocketTask/delegate`` (before it opens), or adopt this protocol in the session's delegate to
/// hear every WebSocket of the session that has no delegate of its own. Each event comes once, open before close, from
/// a task of the loader's: return soon, and do not wait there on the socket itself.
public protocol WebSocketTaskDelegate: AnyObject, Sendable {
    /// The handshake succeeded: `task` is open, speaking `protocol`, the subprotocol the server took (`nil` for none).
    func webSocketTask(_ task: WebSocketTask, didOpenWithProtocol protocol: String?)

    /// `task` has ended, with the code and reason ``WebSocketTask/closeCode`` and ``WebSocketTask/closeReason`` then
    /// read: the server's close frame (URLSession's one case), a close this end began (``WebSocketTask/cancel(with:reason:)``
    /// or a fault of the server's), or ``WebSocketTask/CloseCode/abnormalClosure`` for a connection lost without a close
    /// frame. Not told for a task let go (its connection closes with ``WebSocketTask/CloseCode/goingAway``) nor for one
    /// that never opened.
    func webSocketTask(_ task: WebSocketTask, didCloseWith code: WebSocketTask.CloseCode, reason: Data?)
}

extension WebSocketTaskDelegate {
    /// Does nothing.
    public func webSocketTask(_ task: WebSocketTask, didOpenWithProtocol protocol: String?) {}
    /// Does nothing.
    public func webSocketTask(_ task: WebSocketTask, didCloseWith code: WebSocketTask.CloseCode, reason: Data?) {}
}
