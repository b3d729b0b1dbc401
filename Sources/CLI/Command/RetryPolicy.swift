import FoundationEssentials
import FTPScheme
import Loader

/// curl's `--retry` rules: which failures are worth another try, and how long to wait before it.
///
/// Transient, as curl counts it: a timeout, a host name that did not resolve, an HTTP `408`, `429`, `500`, `502`,
/// `503` or `504`, an FTP `4xx` reply; with ``connectionRefused`` a connection the server refused too, with
/// ``allErrors`` any failure of the load (not a failure to write the output). The wait is ``fixedDelay``, else one
/// second doubling up to ten minutes, or the server's `Retry-After` when that is longer (up to ten minutes too); no
/// retry starts past ``maximumTime`` from the transfer's first start.
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

    /// Whether a response with `status` is tried again: a transient one, or with `--retry-all-errors` and `-f`
    /// (`failsOnHTTPError`) any error status.
    func retries(status: Int, failsOnHTTPError: Bool) -> Bool {
        Self.isTransient(status: status) || (allErrors && failsOnHTTPError && status >= 400)
    }

    /// Whether `error`, a failed load, is worth another try.
    func isTransient(_ error: LoadError) -> Bool {
        if allErrors { return true }
        if let reply = error.underlying as? FTPReply { return reply.isTransient }
        switch error.code {
        case .timedOut, .cannotFindHost: return true
        case .cannotConnectToHost: return connectionRefused && Self.isRefusal(error)
        default: return false
        }
    }

    /// Whether `error` is a connection the host (or the proxy's host) refused, `ECONNREFUSED`: not a host out of
    /// reach, nor a proxy that answered and would not open a tunnel.
    static func isRefusal(_ error: LoadError) -> Bool {
        (error.underlying as? POSIXError)?.code == .ECONNREFUSED
    }

    /// The wait before retry number `retry` (1 for the first), in seconds: the fixed delay, else 1, 2, 4 … up to
    /// ``longestDelay``; or the server's `Retry-After` (seconds, or an HTTP date) when it asks for longer, up to
    /// ``longestDelay`` too (a server's word does not hold a transfer for hours).
    func delay(beforeRetry retry: Int, retryAfter: String? = nil, now: Date = Date()) -> Double {
        let own = fixedDelay > 0 ? fixedDelay : min(Self.longestDelay, Double(1 << min(retry - 1, 20)))
        guard let retryAfter = retryAfter?.trimmingSpaces(), !retryAfter.isEmpty else { return own }
        let asked: Double
        if let seconds = Int(retryAfter), seconds >= 0 {
            asked = Double(seconds)
        } else if let date = HTTPDate.parse(String(retryAfter)) {
            asked = date.timeIntervalSince(now)
        } else {
            return own
        }
        return max(own, min(asked, Self.longestDelay))
    }

    /// Whether retry number `retry` may begin after waiting `wait` seconds, `elapsed` seconds after the first start.
    func allows(retry: Int, elapsed: Double, wait: Double) -> Bool {
        retry <= retries && (maximumTime <= 0 || elapsed + wait <= maximumTime)
    }
}
