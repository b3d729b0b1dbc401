/// A property of the handler contract that ``ConformanceSuite`` checks, by a stable name.
public enum ConformanceProperty: String, CaseIterable, Sendable, CustomStringConvertible {
    /// `canInit(with:)` accepts the fixtures' URLs and rejects a scheme the handler does not declare.
    case acceptsItsRequests
    /// `canonicalRequest(for:)` of a canonical request changes nothing.
    case canonicalRequestIsIdempotent
    /// `requestIsCacheEquivalent(_:to:)` holds for a request and itself and its canonical form, is symmetric,
    /// and never pairs two resources with different bodies.
    case cacheEquivalenceIsSound
    /// The response arrives before any body byte, and exactly once.
    case responseBeforeBody
    /// The body's chunks, appended, equal the fixture's bytes.
    case bodyMatchesFixture
    /// An announced `Content-Length` equals the bytes that arrive (the large fixture's too).
    case announcedLengthMatches
    /// Every load ends with exactly one terminal event (finish or fail), within the fixture's time: of the success,
    /// slow, missing and redirect fixtures.
    case exactlyOneTerminalEvent
    /// Nothing is reported after the terminal event.
    case noEventsAfterTerminal
    /// The handler's calls to its client come one at a time: none begins while another is running (checked on the
    /// success fixtures' loads, whose every report the client makes last a moment).
    case clientCallsDoNotOverlap
    /// A redirect is reported to the client (proposed with `wasRedirectedTo`, or a response with a redirect status
    /// and `Location`), never followed by the handler.
    case redirectIsReported
    /// Transaction metrics (`SchemeHandlerClient.handler(_:didCollect:)`) come only when the client collects them, each
    /// before the response or redirect it belongs to. A handler that reports none keeps it.
    case transactionsBeforeResponse
    /// `startLoading()` returns within a second: the load goes on after it. One that never returns ends the run, every
    /// other property unchecked.
    case startsPromptly
    /// `stopLoading()` returns at once, and after it the handler goes quiet (before start, after the response,
    /// mid-body).
    case stopsPromptly
    /// A cancelled load releases its file descriptors, or keeps them for its session's later loads: a descriptor
    /// still open 2 s after the cancel must then serve the next load (of the success fixture on the large one's origin,
    /// else the first; its body must match), a second cancelled load may leave nothing more open, and all must close
    /// when the session ends (a multiplexed connection, as HTTP/2's, outlives a cancelled stream).
    /// The check reads the whole process's descriptors, so a descriptor left open fails it only if each of three runs
    /// finds one (other work in the process seldom repeats); a load that fails or does not end as cancelled, and a
    /// next load that fails or gives other bytes, fail it at once.
    case cancellationReleasesResources
    /// Loads that finished (the success fixtures, and the missing one's failure) leave no file descriptor open once
    /// their session has ended: a handler that keeps connections between loads closes them in
    /// ``Loader/SchemeHandler/sessionDidEnd(_:)``. Checked like ``cancellationReleasesResources``.
    case finishedLoadsReleaseResources
    /// `stopLoading()` may be called twice, and after completion, without any event resulting.
    case stopLoadingIsSafe
    /// 100 concurrent loads on one session each give their own fixture's exact body.
    case concurrentLoadsAreCorrect
    /// A slow reader of the large fixture does not make memory grow with the body.
    case slowReaderBoundsMemory
    /// A missing resource fails with the expected error code and the URL.
    case missingResourceFails
    /// A load through middleware gives the same response and body as a load without it.
    case middlewareIsTransparent
    /// Slow loads do not block Swift's cooperative thread pool. Like ``cancellationReleasesResources``, a starved
    /// pool fails it only if each of three runs finds it so.
    case doesNotBlockThreadPool

    /// The property's name, as reports print it.
    public var description: String { rawValue }

    /// What the contract requires, in one sentence.
    public var requirement: String {
        switch self {
        case .acceptsItsRequests: return "canInit(with:) accepts the handler's own URLs and rejects other schemes"
        case .canonicalRequestIsIdempotent: return "canonicalRequest(for:) of a canonical request returns it unchanged"
        case .cacheEquivalenceIsSound:
            return "requestIsCacheEquivalent(_:to:) holds for a request and itself or its canonical form, either way round, and never for two resources with different bodies"
        case .responseBeforeBody: return "one response event comes before any body data"
        case .bodyMatchesFixture: return "the body chunks, appended in order, equal the resource byte for byte"
        case .announcedLengthMatches: return "a Content-Length, when announced, equals the bytes delivered"
        case .exactlyOneTerminalEvent: return "each load ends with exactly one finish or fail event"
        case .noEventsAfterTerminal: return "no event follows the finish or fail event"
        case .clientCallsDoNotOverlap: return "calls to the client come one at a time, from one task or queue: each returns before the next begins"
        case .redirectIsReported:
            return "a redirect is reported (wasRedirectedTo, or a redirect status with Location) and not followed by the handler"
        case .transactionsBeforeResponse:
            return "transaction metrics come only when the client's collectsMetrics is true, each before the response (or redirect) it belongs to"
        case .startsPromptly: return "startLoading() returns within a second, the load going on after it, since the loader calls it on the caller's thread"
        case .stopsPromptly:
            return "stopLoading() returns within a second, and after it the handler sends nothing more (beyond events already in flight)"
        case .cancellationReleasesResources:
            return "a cancelled load closes every file descriptor it opened, or keeps it for its session's later loads and closes it when the session ends"
        case .finishedLoadsReleaseResources:
            return "a finished or failed load closes every file descriptor it opened, those kept for later loads when its session ends"
        case .stopLoadingIsSafe: return "stopLoading() twice, or after completion, causes no event and no crash"
        case .concurrentLoadsAreCorrect: return "concurrent loads are independent: each gets its own resource's bytes"
        case .slowReaderBoundsMemory: return "a slow reader holds the handler back (deliver or whenReadyForData) instead of memory growing"
        case .missingResourceFails: return "a missing resource fails with the scheme's error code and the URL, not a success"
        case .middlewareIsTransparent: return "the response and body do not depend on anything but the request"
        case .doesNotBlockThreadPool: return "waiting happens by suspending (await), never by blocking a cooperative thread"
        }
    }
}
