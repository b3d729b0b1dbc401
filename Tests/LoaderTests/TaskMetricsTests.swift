import Foundation
import HTTPTypes
import Loader
import Synchronization
import Testing

/// Reports a transaction for each exchange when its client collects metrics, as a handler that talks to a server
/// does: `metered://x/moved` answers with a redirect to `/fail`, which fails before any exchange (as a refused
/// connection does), reporting none; anything else answers 200 after a short wait.
final class MeteredHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["metered"] }
    /// What `collectsMetrics` said to each load, and when the `/fail` hop began.
    static let asked = Mutex<[Bool]>([])
    static let failStarted = Mutex<Date?>(nil)

    override func load() async throws {
        let collects = client.collectsMetrics
        Self.asked.withLock { $0.append(collects) }
        let path = request.url.path
        if path == "/fail" { Self.failStarted.withLock { $0 = Date() } }
        let status: HTTPResponse.Status = path == "/moved" ? .found : .ok
        let response = LoadResponse(url: request.url, status: status, headerFields: path == "/moved" ? [.location: "/fail"] : [:])
        if collects, path != "/fail" {
            var transaction = LoadTransactionMetrics(request: request, fetchStartDate: Date())
            transaction.remoteAddress = "192.0.2.1"
            transaction.response = response
            transaction.responseStartDate = Date()
            client.handler(self, didCollect: transaction)
        }
        if path == "/fail" {
            try await Task.sleep(for: .milliseconds(50))
            throw LoadError(.networkConnectionLost, url: request.url, reason: "gone")
        }
        try await Task.sleep(for: .milliseconds(20))
        client.handler(self, didReceive: response, body: Data("ok".utf8), finished: true)
    }
}

@Suite("Task metrics: collected only for a task with a delegate, each transaction ended by its own handler", .serialized)
struct TaskMetricsTests {
    final class Recorder: LoadTaskDelegate {
        let collected = Mutex<[LoadTransactionMetrics]>([])
        let finished = Mutex<LoadTaskMetrics?>(nil)
        func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics) { collected.withLock { $0.append(transaction) } }
        func loadTask(_ task: LoadTask, didFinishCollecting metrics: LoadTaskMetrics) { finished.withLock { $0 = metrics } }
    }

    private func session() -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [MeteredHandler.self]
        return LoaderSession(configuration: configuration)
    }

    @Test("Without a delegate the handler is told not to collect; with one, its transaction comes back with its end stamped")
    func onlyWithDelegate() async throws {
        MeteredHandler.asked.withLock { $0.removeAll() }
        let url = URL(string: "metered://x/ok")!
        _ = try await session().data(from: url)
        let recorder = Recorder()
        let (data, _) = try await session().data(from: url, delegate: recorder)
        #expect(data == Data("ok".utf8))
        #expect(MeteredHandler.asked.withLock { $0 } == [false, true])
        let metrics = try #require(recorder.finished.withLock { $0 })
        try #require(metrics.transactions.count == 1)
        let transaction = metrics.transactions[0]
        #expect(transaction.remoteAddress == "192.0.2.1" && transaction.response?.status == .ok)
        #expect(transaction.responseEndDate.map { $0 >= transaction.responseStartDate! } == true)
        #expect(metrics.taskInterval.contains(transaction.responseEndDate!) && metrics.redirectCount == 0)
        #expect(recorder.collected.withLock { $0.count } == 1)
    }

    @Test("A redirect whose second hop fails before any exchange: the first transaction ends when its own handler did, not at the failure")
    func endStampedByItsOwnHandler() async throws {
        let recorder = Recorder()
        let error = await #expect(throws: LoadError.self) {
            _ = try await session().data(from: URL(string: "metered://x/moved")!, delegate: recorder)
        }
        #expect(error?.code == .networkConnectionLost)
        let metrics = try #require(recorder.finished.withLock { $0 })
        #expect(metrics.redirectCount == 1)
        try #require(metrics.transactions.count == 1)
        let moved = metrics.transactions[0]
        #expect(moved.response?.status == .found)
        let failStarted = try #require(MeteredHandler.failStarted.withLock { $0 })
        // The failure came 50 ms after the second hop began; the first hop had ended before it began.
        #expect(try #require(moved.responseEndDate) <= failStarted)
        #expect(recorder.collected.withLock { $0.map(\.request.url.path) } == ["/moved"])
    }
}
