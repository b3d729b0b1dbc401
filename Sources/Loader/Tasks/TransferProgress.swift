/// How far a task's transfer has come: a snapshot, read from ``LoadTask/progress``.
public struct TransferProgress: Sendable, Hashable {
    /// Body bytes received so far.
    public var countOfBytesReceived: Int64 = 0
    /// The body size announced by the response, or `nil` when unknown.
    public var countOfBytesExpectedToReceive: Int64?
    /// Request body bytes sent so far.
    public var countOfBytesSent: Int64 = 0
    /// The request body size, or `nil` when unknown.
    public var countOfBytesExpectedToSend: Int64?

    /// The received fraction in 0…1, or `nil` when the expected size is unknown.
    public var fractionCompleted: Double? {
        guard let expected = countOfBytesExpectedToReceive, expected > 0 else { return nil }
        return min(1, Double(countOfBytesReceived) / Double(expected))
    }

    /// Makes an empty progress.
    public init() {}
}
