import FoundationEssentials
import Loader

/// curl's `-Y`/`--speed-limit` and `-y`/`--speed-time`: a transfer slower than ``bytesPerSecond`` for ``seconds`` on end
/// is aborted (28), rather than left to crawl. A plain value, fed the body's running total as its chunks come; a
/// transfer that sends nothing at all for ``seconds`` is the session's idle timeout's, which the tool sets to as much.
struct LowSpeedLimit: Sendable {
    /// The slowest rate that counts as moving, in bytes per second (curl's default with `-y` alone: 1).
    let bytesPerSecond: Int64
    /// For how long a transfer may go slower, in seconds (curl's default with `-Y` alone: 30).
    let seconds: Double

    /// What the check has seen of one transfer.
    struct Watch {
        /// The last sample: when it was taken (seconds since the transfer began) and the bytes by then.
        private var mark: (time: Double, bytes: Int64) = (0, 0)
        /// Since when the transfer has been too slow, if it is.
        private var slowSince: Double?

        /// Whether the transfer is to be aborted, given `total` bytes at `time` seconds since it began. The rate is
        /// judged over a second at least, from the last sample: chunks a moment apart say little of it.
        mutating func tooSlow(total: Int64, at time: Double, under limit: LowSpeedLimit) -> Bool {
            let elapsed = time - mark.time
            guard elapsed >= 1 else { return false }
            if Double(total - mark.bytes) / elapsed < Double(limit.bytesPerSecond) {
                let since = slowSince ?? mark.time
                slowSince = since
                if time - since >= limit.seconds { return true }
            } else {
                slowSince = nil
            }
            mark = (time, total)
            return false
        }
    }

    /// The failure of `url`'s transfer, in curl's words.
    func error(for url: URL) -> LoadError {
        LoadError(.timedOut, url: url,
                  reason: "operation too slow: less than \(bytesPerSecond) bytes/sec transferred the last \(seconds.printed("%g")) seconds (-Y/-y)")
    }
}
