/// Holds a body to `--limit-rate`'s average, as curl's limit does: after each chunk, waits until the bytes so far
/// are no more than the rate allows since the body began. Reading less often, the loader's buffer fills and the
/// connection's flow control slows the server: the bytes in memory stay bounded.
struct RatePacer {
    /// The most bytes per second.
    let bytesPerSecond: Int64
    /// When `-m`'s time for the transfer runs out, if it does: the loader's own timeout cannot see a body it holds
    /// whole already, which only these pauses make slow.
    let deadline: ContinuousClock.Instant?
    /// When the body began.
    private let start = ContinuousClock.now

    /// `-m` ran out during a pause.
    struct DeadlinePassed: Error {}

    /// A pacer for a body that begins now.
    init(bytesPerSecond: Int64, deadline: ContinuousClock.Instant? = nil) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.deadline = deadline
    }

    /// Waits, if `total` bytes came sooner than the rate allows. Throws ``DeadlinePassed`` when the deadline comes
    /// first, and `CancellationError` if the task is cancelled.
    func pause(after total: Int64) async throws {
        // Seconds past a year of pausing are the same as a year (and stay inside Duration's reach).
        let seconds = min(Double(total) / Double(bytesPerSecond), 365 * 86_400)
        let due = start.advanced(by: .nanoseconds(Int64(seconds * 1e9)))
        if let deadline, due > deadline {
            if deadline > .now { try await Task.sleep(until: deadline, clock: .continuous) }
            throw DeadlinePassed()
        }
        if due > .now { try await Task.sleep(until: due, clock: .continuous) }
    }
}
