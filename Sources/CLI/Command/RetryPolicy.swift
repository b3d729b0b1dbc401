import FoundationEssentials
import FTPScheme
import Loader

/// curl's `--retry` rules: which failures are worth another try, and how long to wait before it.
///
/// Transient, as curl counts it: a timeout, an HTTP `408`, `429`, `500`, `502`, `503` or `504`, an FTP `4xx` reply;
/// with ``connectionRefused`` a connection the server refused too, with ``allErrors`` any failure of the load (not
/// a failure to write the output). The wait is the server's `Retry-After` when it gave one, else ``fixedDelay``, else
/// one second doubling up to ten minutes; no retry starts past ``maximumTime`` from the transfer's first start.
struct RetryPolicy: Sendable {
    /// How many times a transfer may be tried again (`--retry`); 0 for none.
    var retries = 0
    /// The wait before each retry, in seconds (`--retry-delay`); 0 for the doubling one.
    var fixedDelay: Double = 0
    /// How long after the transfer's first start a retry may still begin, in seconds (`--retry-max-time`); 0 for no limit.
    var maximumTime: Double = 0
    /// Whether a refused connection counts as transient (`--retry-connrefused`).
    var connectionRefused = false
    /// Whether every failure of the load counts as transient (`--retry-all-errors`).
    var allErrors = false

    /// The longest wait of the doubling one, as curl's.
    static let longestDelay: Double = 600

    /// The HTTP statuses that say "try again later".
    static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// Whether a response with `status` is worth another try.
    static func isTransient(status: Int) -> Bool { transientStatuses.contains(status) }

    /// Whether `error`, a failed load, is worth another try.
    func isTransient(_ error: LoadError) -> Bool {
        if allErrors { return true }
        switch error.code {
        case .timedOut: return true
        case .cannotConnectToHost: return connectionRefused
        default: return (error.underlying as? FTPReply)?.isTransient ?? false
        }
    }

    /// The wait before retry number `retry` (1 for the first), in seconds: the server's `Retry-After` (seconds, or an
    /// HTTP date) when given, else the fixed delay, else 1, 2, 4 … up to ``longestDelay``.
    func delay(beforeRetry retry: Int, retryAfter: String? = nil, now: Date = Date()) -> Double {
        if let retryAfter = retryAfter?.trimmingSpaces(), !retryAfter.isEmpty {
            if let seconds = Int(retryAfter), seconds >= 0 { return Double(seconds) }
            if let date = HTTPDate.parse(String(retryAfter)) { return max(0, date.timeIntervalSince(now)) }
        }
        if fixedDelay > 0 { return fixedDelay }
        return min(Self.longestDelay, Double(1 << min(retry - 1, 20)))
    }

    /// Whether retry number `retry` may begin after waiting `wait` seconds, `elapsed` seconds after the first start.
    func allows(retry: Int, elapsed: Double, wait: Double) -> Bool {
        retry <= retries && (maximumTime <= 0 || elapsed + wait <= maximumTime)
    }
}
