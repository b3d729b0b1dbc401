/// Holds a body to `--limit-rate`'s average, as curl's limit does: after each chunk, waits until the bytes so far
/// are no more than the rate allows since the body began. Reading less often, the loader's buffer fills and the
/// connection's flow control slows the server: the bytes in memory stay bounded.
struct RatePacer {
    /// The most bytes per second.
    let bytesPerSecond: Int64
    /// When the body began.
    private let start = ContinuousClock.now

    /// A pacer for a body that begins now.
    init(bytesPerSecond: Int64) {
        self.bytesPerSecond = max(1, bytesPerSecond)
    }

    /// Waits, if `total` bytes came sooner than the rate allows. Throws `CancellationError` if the task is cancelled.
    func pause(after total: Int64) async throws {
        let seconds = Double(total) / Double(bytesPerSecond)
        let due = start.advanced(by: .nanoseconds(Int64(seconds * 1e9)))
        if due > .now { try await Task.sleep(until: due, clock: .continuous) }
    }
}
