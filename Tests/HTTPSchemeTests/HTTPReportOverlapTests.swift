import Foundation
import HTTPScheme
import Loader
import Synchronization
import Testing
import TestSupport

/// A client that notes a report beginning while another is still running, and any report after the load's end.
/// Each report lingers a moment, so that a report from a second thread lands inside one.
private final class OverlapClient: SchemeHandlerClient {
    private let running = Atomic<Int>(0)
    private let overlapping = Locked<[String]>([])
    private let afterEnd = Locked<[String]>([])
    private let ending = Locked<LoadError?>(nil)
    private let ended = Atomic<Bool>(false)
    /// Body reports so far.
    let bodyReports = Atomic<Int>(0)

    var overlaps: [String] { overlapping.withLock { $0 } }
    var reportsAfterEnd: [String] { afterEnd.withLock { $0 } }
    var failure: LoadError? { ending.withLock { $0 } }
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    private func report(_ name: String, ends: Bool = false, _ body: () -> Void = {}) {
        if running.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue > 0 { overlapping.withLock { $0.append(name) } }
        if ended.load(ordering: .acquiring) { afterEnd.withLock { $0.append(name) } }
        body()
        usleep(3000)
        if ends { ended.store(true, ordering: .releasing) }
        running.wrappingSubtract(1, ordering: .acquiringAndReleasing)
    }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) { report("didReceive(response)") }
    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) { report("redirect") }
    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: Data, finished: Bool) {
        report("didReceive(response, body)", ends: finished) { bodyReports.add(1, ordering: .relaxed) }
    }
    func handler(_ handler: SchemeHandler, didLoad data: Data) { report("didLoad") { bodyReports.add(1, ordering: .relaxed) } }
    func handler(_ handler: SchemeHandler, deliver data: Data) async throws { report("deliver") { bodyReports.add(1, ordering: .relaxed) } }
    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) { callback() }
    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) { report("didSendBodyData") }
    func handlerDidFinishLoading(_ handler: SchemeHandler) { report("handlerDidFinishLoading", ends: true) }
    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) {
        report("didFailWith", ends: true) { ending.withLock { $0 = error } }
    }
}

/// One round at a time: the client lingers 3 ms in each report, on the event loops every other suite shares.
/// A client that answers a server-trust question after `answerDelay`, trusting the server, and notes whether the
/// load's end was reported while the question was still being asked.
private final class SlowTrustClient: EndWatchingClient {
    let answerDelay: Duration
    private let asking = Atomic<Int>(0)
    private let questions = Atomic<Int>(0)
    private let endedDuringQuestion = Atomic<Bool>(false)
    private let ending = Locked<LoadError?>(nil)
    private let ended = Atomic<Bool>(false)

    init(answerDelay: Duration) {
        self.answerDelay = answerDelay
    }

    var questionsAsked: Int { questions.load(ordering: .acquiring) }
    var endMetQuestion: Bool { endedDuringQuestion.load(ordering: .acquiring) }
    var failure: LoadError? { ending.withLock { $0 } }
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    func handler(_ handler: SchemeHandler, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        questions.add(1, ordering: .acquiringAndReleasing)
        asking.add(1, ordering: .acquiringAndReleasing)
        defer { asking.subtract(1, ordering: .acquiringAndReleasing) }
        try? await Task.sleep(for: answerDelay)
        return .trustServer
    }

    private func end(_ error: LoadError?) {
        if asking.load(ordering: .acquiring) > 0 { endedDuringQuestion.store(true, ordering: .releasing) }
        ending.withLock { $0 = error }
        ended.store(true, ordering: .releasing)
    }

    func handlerDidFinishLoading(_ handler: SchemeHandler) { end(nil) }
    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) { end(error) }
}

@Suite("http: the handler's calls to its client never overlap", .serialized)
struct HTTPReportOverlapTests {
    struct Broken: Error {}

    @Test("An upload whose body fails while the response streams in: the failure is reported after the last body report, not beside one, and nothing follows it",
          arguments: 1...3)
    func failedUploadDuringResponse(round: Int) async throws {
        try await checkFailedUpload(LoadRequest(url: ScriptedServer.shared.url("/stream-at-once"), method: .post))
    }

    @Test("The same over HTTP/2 (a stream of a cleartext connection, prior knowledge)", arguments: 1...3)
    func failedUploadDuringResponseOverHTTP2(round: Int) async throws {
        let server = try ScriptedHTTP2Server()
        var request = LoadRequest(url: URL(string: "http://127.0.0.1:\(server.port)/stream-at-once")!, method: .post)
        request.options[HTTPClientOptions.self].http2PriorKnowledge = true
        try await checkFailedUpload(request)
        withExtendedLifetime(server) {}
    }

    @Test("A server-trust question still being asked when the connect timeout ends the handshake: the load fails after the answer, not beside the question")
    func trustQuestionOutlastsHandshake() async throws {
        let nginx = try TestServers.requireNginx()
        // The test CA is not given: the standard rules refuse the server, and the delegate is asked on a second
        // connection, whose handshake waits for it longer than the connect timeout allows.
        var request = LoadRequest(url: URL(string: "https://localhost:\(nginx.httpsPort)/1k.bin")!)
        // Long enough for the handshake to reach the question on a machine busy with the other suites (at 0.5 s the
        // timeout once came first, in a full run); the answer comes well after it.
        request.options[HTTPClientOptions.self].connectTimeout = 2
        let client = SlowTrustClient(answerDelay: .milliseconds(3500))
        let handler = HTTPSchemeHandler(request: request, cachedResponse: nil, client: client)
        handler.startLoading()
        for _ in 0..<3000 where !client.hasEnded {
            try await Task.sleep(for: .milliseconds(10))
        }
        handler.stopLoading()
        #expect(client.hasEnded)
        #expect(client.questionsAsked == 1)
        #expect(client.failure?.code == .timedOut, "\(String(describing: client.failure))")
        #expect(!client.endMetQuestion, "the failure was reported while the trust question was still being asked")
    }

    /// Loads `request` (a POST answered at once with an endless body) with a body that fails once 20 body reports
    /// came, and checks the reports.
    private func checkFailedUpload(_ base: LoadRequest) async throws {
        let client = OverlapClient()
        var request = base
        request.body = .stream(length: nil) {
            AsyncThrowingStream { continuation in
                continuation.yield(Data("start".utf8))
                Task {
                    // Fails once the response's body is coming in (at most 20 s).
                    for _ in 0..<2000 where client.bodyReports.load(ordering: .relaxed) < 20 {
                        try? await Task.sleep(for: .milliseconds(10))
                    }
                    continuation.finish(throwing: Broken())
                }
            }
        }
        let handler = HTTPSchemeHandler(request: request, cachedResponse: nil, client: client)
        handler.startLoading()
        for _ in 0..<3000 where !client.hasEnded {
            try await Task.sleep(for: .milliseconds(10))
        }
        // Room for a late report from the event loop to show.
        try await Task.sleep(for: .milliseconds(200))
        handler.stopLoading()
        #expect(client.hasEnded)
        #expect(client.bodyReports.load(ordering: .relaxed) >= 20)
        #expect(client.failure?.code == .requestBodyStreamExhausted, "\(String(describing: client.failure))")
        #expect(client.failure?.underlying is Broken)
        #expect(client.overlaps.isEmpty, "reports that began while another ran: \(client.overlaps)")
        #expect(client.reportsAfterEnd.isEmpty, "reports after the load's end: \(client.reportsAfterEnd)")
    }
}
