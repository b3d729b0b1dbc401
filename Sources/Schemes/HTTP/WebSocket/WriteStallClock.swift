import NIOCore

/// Whether the bytes a socket was handed are leaving it, as a plain value: ``SocketWriteWatch`` feeds it what it
/// reads off the channel at each look, and closes the connection when it says ``Verdict/stalled``. A server that
/// stops reading leaves bytes waiting with none leaving; one that reads slowly still takes some between looks.
struct WriteStallClock {
    /// What a look found.
    enum Verdict: Equatable {
        /// Nothing waits to be written: no more looks are needed until more is handed over.
        case clear
        /// Bytes wait, and some left within ``limit``.
        case waiting
        /// Bytes have waited ``limit`` or longer with none leaving.
        case stalled
    }

    /// How long bytes may wait with none leaving.
    let limit: TimeAmount
    /// The bytes written out by the last look that saw any leave.
    private var written: UInt64 = 0
    /// When bytes last left, or began to wait; `nil` while none waits.
    private var since: NIODeadline?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    /// A look at `now`: `handed` bytes given to the socket so far, of which `waiting` are not written yet.
    mutating func look(handed: UInt64, waiting: Int, at now: NIODeadline) -> Verdict {
        let out = handed - min(handed, UInt64(max(0, waiting)))
        guard waiting > 0 else {
            written = out
            since = nil
            return .clear
        }
        guard let since, out <= written else {
            // Bytes left since the last look, or have just begun to wait: the clock starts from here.
            written = out
            self.since = now
            return .waiting
        }
        return now - since >= limit ? .stalled : .waiting
    }
}
