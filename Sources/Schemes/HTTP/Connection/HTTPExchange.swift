import FoundationEssentials
import Loader
import NIOCore
import Synchronization

/// One request and its response on a connection: what the event loop reports to, and how the handler
/// learns the exchange has ended.
final class HTTPExchange: Sendable {
    /// How an exchange's end is reported: the outcome, success at the end of the response.
    typealias EndHandler = @Sendable (Result<Void, any Error>) -> Void

    /// Who hears of the end, once, when the response ends or the exchange fails. A plain call rather than a
    /// promise: a bodiless request on the fast path has no task to wake, and a promise with a callback on it
    /// cost three allocations per request.
    private enum Ending: Sendable {
        /// The fast path's handler, with the connection it leased: told directly, with no closure to
        /// allocate on every request.
        case fastPath(HTTPSchemeHandler, ConnectionPool.Lease)
        /// Anything else: a task's promise, a test.
        case call(EndHandler)
    }

    let url: URL
    let isHead: Bool
    let handler: SchemeHandler
    /// The transaction's metrics so far, when the load collects them.
    let metrics: ExchangeMetrics?
    private let ending: Ending
    private let flags = Atomic<UInt8>(0)

    private static let responseStartedFlag: UInt8 = 1
    private static let requestSentFlag: UInt8 = 2
    private static let responseEndedFlag: UInt8 = 4
    private static let bodilessFlag: UInt8 = 8
    private static let endReportedFlag: UInt8 = 16
    private static let proxyChallengeFlag: UInt8 = 32
    private static let abandonedFlag: UInt8 = 64

    /// An exchange whose end, success or failure, is passed to `onEnd` (a task's promise, a test).
    convenience init(url: URL, isHead: Bool, handler: SchemeHandler, metrics: ExchangeMetrics? = nil, onEnd: @escaping EndHandler) {
        self.init(url: url, isHead: isHead, handler: handler, metrics: metrics, ending: .call(onEnd))
    }

    /// An exchange of the fast path: its end goes to `handler`'s ``HTTPSchemeHandler/exchange(_:endedWith:on:)``.
    convenience init(url: URL, isHead: Bool, fastPath handler: HTTPSchemeHandler, lease: ConnectionPool.Lease, metrics: ExchangeMetrics?) {
        self.init(url: url, isHead: isHead, handler: handler, metrics: metrics, ending: .fastPath(handler, lease))
    }

    private init(url: URL, isHead: Bool, handler: SchemeHandler, metrics: ExchangeMetrics?, ending: Ending) {
        self.url = url
        self.isHead = isHead
        self.handler = handler
        self.metrics = metrics
        self.ending = ending
    }

    /// Reports the end of the response; nothing if the end was reported already.
    func succeed() { end(.success(())) }

    /// Reports a failure; nothing if the end was reported already.
    func fail(_ error: any Error) { end(.failure(error)) }

    private func end(_ result: Result<Void, any Error>) {
        let before = flags.bitwiseOr(Self.endReportedFlag, ordering: .acquiringAndReleasing).oldValue
        guard before & Self.endReportedFlag == 0 else { return }
        switch ending {
        case .fastPath(let handler, let lease): handler.exchange(self, endedWith: result, on: lease)
        case .call(let onEnd): onEnd(result)
        }
    }

    var client: any SchemeHandlerClient { handler.client }

    /// Whether any of the response (its head) has arrived: after that a retry would repeat events.
    var responseStarted: Bool { flags.load(ordering: .acquiring) & Self.responseStartedFlag != 0 }
    /// Whether the exchange's end, success or failure, has been reported.
    var endReported: Bool { flags.load(ordering: .acquiring) & Self.endReportedFlag != 0 }
    /// Whether the response has ended (so a request body still being sent can stop).
    var responseEnded: Bool { flags.load(ordering: .acquiring) & Self.responseEndedFlag != 0 }

    /// Whether the request is all sent, given the bytes the channel still holds: a bodiless request
    /// (head and end written at once) is sent once the channel holds nothing.
    func isSent(buffered: @autoclosure () -> Int) -> Bool {
        let flags = flags.load(ordering: .acquiring)
        if flags & Self.requestSentFlag != 0 { return true }
        return flags & Self.bodilessFlag != 0 && buffered() == 0
    }

    /// Whether a proxy's `407` with a `Basic` challenge ends the exchange with a ``ProxyChallenge`` for the handler
    /// to answer, rather than reaching the reader.
    var answersProxyChallenge: Bool { flags.load(ordering: .acquiring) & Self.proxyChallengeFlag != 0 }

    func markAnswersProxyChallenge() { flags.bitwiseOr(Self.proxyChallengeFlag, ordering: .acquiringAndReleasing) }
    func markBodiless() { flags.bitwiseOr(Self.bodilessFlag, ordering: .acquiringAndReleasing) }
    func markResponseStarted() { flags.bitwiseOr(Self.responseStartedFlag, ordering: .acquiringAndReleasing) }
    func markRequestSent() { flags.bitwiseOr(Self.requestSentFlag, ordering: .acquiringAndReleasing) }
    func markResponseEnded() { flags.bitwiseOr(Self.responseEndedFlag, ordering: .acquiringAndReleasing) }
    /// Marks the exchange given up by its connection; `false` if it was already (its connection closed then).
    func markAbandoned() -> Bool {
        flags.bitwiseOr(Self.abandonedFlag, ordering: .acquiringAndReleasing).oldValue & Self.abandonedFlag == 0
    }
}
