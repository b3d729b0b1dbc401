import FoundationEssentials

/// Receives the events of one task. Set it per task (the `delegate:` argument of the session's methods)
/// or for all tasks through the session's ``LoaderSessionDelegate``; a task's own delegate hears each
/// event first, then the session's.
///
/// Every method has an empty default. Methods are called in event order, one at a time per task, on the thread of
/// the task's reader (an event loop only when the reader runs there, as on ``LoaderSession`` calls made with an event
/// loop's task executor), or on a Swift task's for upload progress and for the end a ``LoadTask/cancel()`` caused; never
/// on a handler's own thread nor inside `cancel()`: return quickly, and hand long work elsewhere. No lock of the loader is held while one runs, so a method may call into its task (suspend or cancel
/// it); what that causes is told after the method returns, and the reader reads on only once the delegates heard each
/// event it reported. An async load returns, a byte stream ends, and a completion handler runs, after the delegates
/// heard the task's completion.
public protocol LoadTaskDelegate: AnyObject, Sendable {
    /// The response head arrived (after middleware: the final response of a redirect chain).
    func loadTask(_ task: LoadTask, didReceive response: LoadResponse)
    /// A chunk of the body arrived (not called for downloads, which report writes instead).
    func loadTask(_ task: LoadTask, didReceive data: Data)
    /// Request body bytes were sent.
    func loadTask(_ task: LoadTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?)
    /// A download wrote bytes to its file. After a resume, `totalBytesWritten` counts the bytes the file had, and
    /// `totalBytesExpectedToWrite` is the whole file's size.
    func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?)
    /// A download made from resume data goes on from `fileOffset` bytes of its file (0 when the server sent the whole
    /// body again), towards `expectedTotalBytes` in all when known: told before its first write.
    func loadTask(_ task: LoadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64?)
    /// A response redirects to `request`: return it (or a changed request) to follow, or `nil` to stop
    /// and hand the redirect response to the caller.
    func loadTask(_ task: LoadTask, willPerformRedirection response: LoadResponse, newRequest request: LoadRequest) async -> LoadRequest?
    /// A server asks for credentials. The default answer, ``ChallengeDisposition/performDefaultHandling``,
    /// passes the question on to the session's delegate, then to the session's own rules.
    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition
    /// A handler's exchange with a server, the request as it went out, the connection and the times so far: told
    /// before the task's next event after its response head arrived (the final response, a redirect's question, a
    /// challenge, or the completion), so a verbose log has it before the body. Each hop of a redirect and each
    /// answered challenge is one.
    func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics)
    /// What the load took, just before ``loadTask(_:didCompleteWithError:)``.
    func loadTask(_ task: LoadTask, didFinishCollecting metrics: LoadTaskMetrics)
    /// The task ended: `error` is `nil` on success.
    func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?)
}

extension LoadTaskDelegate {
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didReceive response: LoadResponse) {}
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didReceive data: Data) {}
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {}
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?) {}
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64?) {}
    /// Follows the redirect unchanged.
    public func loadTask(_ task: LoadTask, willPerformRedirection response: LoadResponse, newRequest request: LoadRequest) async -> LoadRequest? {
        request
    }
    /// Passes the challenge on.
    public func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        .performDefaultHandling
    }
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics) {}
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didFinishCollecting metrics: LoadTaskMetrics) {}
    /// Does nothing.
    public func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {}
}

/// Receives the events of a session and, after each task's own delegate, of all its tasks.
public protocol LoaderSessionDelegate: LoadTaskDelegate {
    /// A task was created (before it starts).
    func session(_ session: LoaderSession, didCreateTask task: LoadTask)
    /// The session was invalidated and its last task has ended.
    func session(_ session: LoaderSession, didBecomeInvalidWithError error: LoadError?)
    /// A challenge that belongs to no load task, answered as a task's challenge is (`loadTask(_:didReceive:)`): the
    /// server-trust question of a WebSocket handshake (``AuthenticationChallenge/serverTrust`` is set), as URLSession's
    /// session-level challenge method gets connection-level ones. It is asked once per connection: after a handshake
    /// the standard rules accepted (refusing the space, or cancelling, fails it: pinning), or when they refused the
    /// server (``ChallengeDisposition/trustServer`` accepts it: a development server). Cancelling the socket ends the
    /// wait for an answer. A WebSocket handshake's `401` with a `Basic` or `Digest` challenge comes here too, before
    /// default handling (the URL's user info, then the credential store), since a WebSocket task has no task delegate.
    func session(_ session: LoaderSession, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition
}

extension LoaderSessionDelegate {
    /// Does nothing.
    public func session(_ session: LoaderSession, didCreateTask task: LoadTask) {}
    /// Does nothing.
    public func session(_ session: LoaderSession, didBecomeInvalidWithError error: LoadError?) {}
    /// Default handling: the standard rules decide (for a `401`, the URL's user info and the credential store).
    public func session(_ session: LoaderSession, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        .performDefaultHandling
    }
}
