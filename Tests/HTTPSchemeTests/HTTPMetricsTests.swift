import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import Synchronization
import TestSupport
import Testing

@Suite("http(s): a task's metrics, as URLSession's: each exchange's request as sent, its connection and its times (nginx)")
struct HTTPMetricsTests {
    /// What a task's delegate was told, and in which order.
    final class Recorder: LoadTaskDelegate {
        let collected = Mutex<[LoadTransactionMetrics]>([])
        let finished = Mutex<[LoadTaskMetrics]>([])
        let events = Mutex<[String]>([])

        func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics) {
            collected.withLock { $0.append(transaction) }
            events.withLock { $0.append("transaction") }
        }

        func loadTask(_ task: LoadTask, didReceive response: LoadResponse) {
            events.withLock { $0.append("response") }
        }

        func loadTask(_ task: LoadTask, didFinishCollecting metrics: LoadTaskMetrics) {
            finished.withLock { $0.append(metrics) }
            events.withLock { $0.append("metrics") }
        }

        func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {
            events.withLock { $0.append("complete") }
        }
    }

    private static let test = HTTPField.Name("X-Test")!
    private static let host = HTTPField.Name("Host")!

    /// Whether the dates that are there come in the order of the steps.
    private func inOrder(_ transaction: LoadTransactionMetrics) -> Bool {
        let dates = [transaction.fetchStartDate, transaction.connectStartDate, transaction.secureConnectionStartDate,
                     transaction.secureConnectionEndDate, transaction.connectEndDate, transaction.requestStartDate,
                     transaction.responseStartDate, transaction.responseEndDate].compactMap { $0 }
        return zip(dates, dates.dropFirst()).allSatisfy { $0 <= $1 }
    }

    @Test("A gzip body's exchange counts the bytes that came, the caller gets the text decoded from them")
    func bodyBytesBeforeDecoding() async throws {
        let url = try Nginx.http("/gz/lines.txt")
        var asGzip = LoadRequest(url: url)
        asGzip.headerFields[.acceptEncoding] = "gzip"
        let (gzip, _) = try await Nginx.session().data(for: asGzip)
        try #require(gzip.prefix(2) == Data([0x1F, 0x8B]), "nginx's gzip stream, as the caller asked for it")

        let recorder = Recorder()
        let (text, response) = try await Nginx.session().data(for: LoadRequest(url: url), delegate: recorder)
        #expect(response.status?.code == 200 && text.count > gzip.count)
        let transaction = try #require(recorder.finished.withLock { $0.first?.transactions.last })
        #expect(transaction.countOfResponseBodyBytesReceived == Int64(gzip.count))
        // The copy told as the head came is counted only if the whole body had come by then (the reader may be scheduled
        // after the event loop read it all, as when other tests run beside this one): never a part, nor the decoded size.
        let told = recorder.collected.withLock { $0.first?.countOfResponseBodyBytesReceived }
        #expect(told == 0 || told == Int64(gzip.count), "\(String(describing: told))")
    }

    @Test("A redirect's two hops: each request as it went out, a new connection then the same one again, the times in order")
    func redirect() async throws {
        let port = try Nginx.require().httpPort
        var request = LoadRequest(url: try Nginx.http("/redirect"))
        request.headerFields[Self.test] = "1"
        let recorder = Recorder()
        let (data, response) = try await Nginx.session().data(for: request, delegate: recorder)
        #expect(response.status?.code == 200 && String(decoding: data, as: UTF8.self) == "Hello from nginx\n")

        let metrics = try #require(recorder.finished.withLock { $0.first })
        #expect(recorder.finished.withLock { $0.count } == 1)
        #expect(metrics.redirectCount == 1)
        try #require(metrics.transactions.count == 2, "\(metrics.transactions)")
        let (first, second) = (metrics.transactions[0], metrics.transactions[1])
        #expect(first.request.url.path == "/redirect" && first.response?.status?.code == 301)
        #expect(second.request.url.path == "/hello.txt" && second.response?.status?.code == 200)
        for transaction in [first, second] {
            // As sent: with the Host the handler adds, and the request's own field.
            #expect(transaction.request.headerFields[Self.host] == "127.0.0.1:\(port)", "\(transaction.request.headerFields)")
            #expect(transaction.request.headerFields[Self.test] == "1")
            #expect(transaction.networkProtocolName == "http/1.1")
            #expect(transaction.remoteAddress == "127.0.0.1" && transaction.remotePort == port)
            #expect(transaction.localAddress == "127.0.0.1" && (transaction.localPort ?? 0) > 0)
            #expect(transaction.requestStartDate != nil && transaction.responseStartDate != nil && transaction.responseEndDate != nil)
            #expect(inOrder(transaction), "\(transaction)")
            #expect(metrics.taskInterval.contains(transaction.fetchStartDate) && metrics.taskInterval.contains(transaction.responseEndDate!))
        }
        // A new session's first request opens a connection; nginx keeps it for the redirect's second.
        #expect(!first.isReusedConnection && first.connectStartDate != nil && first.connectEndDate != nil)
        // Cleartext: no TLS to time.
        #expect(first.secureConnectionStartDate == nil && first.secureConnectionEndDate == nil)
        #expect(second.isReusedConnection && second.connectStartDate == nil && second.localPort == first.localPort)
        #expect(second.fetchStartDate >= first.responseStartDate!)

        // Each told before the response that follows it; the whole before the completion.
        let collected = recorder.collected.withLock { $0 }
        #expect(collected.map(\.request.url.path) == ["/redirect", "/hello.txt"])
        #expect(recorder.events.withLock { $0 } == ["transaction", "transaction", "response", "metrics", "complete"])
    }

    @Test("A request with a body is collected too: its method and length as sent")
    func upload() async throws {
        var request = LoadRequest(url: try Nginx.http("/echo"), method: .post)
        request.headerFields[.contentType] = "text/plain"
        let recorder = Recorder()
        let (data, _) = try await Nginx.session().upload(for: request, from: Data("hello".utf8), delegate: recorder)
        #expect(String(decoding: data, as: UTF8.self).hasPrefix("method=POST length=5"))
        let transactions = recorder.finished.withLock { $0.first?.transactions } ?? []
        try #require(transactions.count == 1)
        #expect(transactions[0].request.method == .post && transactions[0].request.headerFields[.contentLength] == "5",
                "\(transactions[0].request.headerFields)")
        #expect(inOrder(transactions[0]))
    }

    @Test("Over HTTP/2: h2, the first stream's request opens the connection, the next one reuses it")
    func http2() async throws {
        let url = URL(string: "https://localhost:\(try Nginx.require().h2Port)/hello.txt")!
        let session = try Nginx.session()
        var transactions: [LoadTransactionMetrics] = []
        for _ in 0..<2 {
            let recorder = Recorder()
            _ = try await session.data(from: url, delegate: recorder)
            transactions += recorder.finished.withLock { $0.first?.transactions } ?? []
        }
        try #require(transactions.count == 2)
        #expect(transactions.allSatisfy { $0.networkProtocolName == "h2" && $0.response?.networkProtocolName == "h2" })
        #expect(transactions.allSatisfy { ["127.0.0.1", "::1"].contains($0.remoteAddress) }, "\(transactions.map(\.remoteAddress))")
        #expect(!transactions[0].isReusedConnection && transactions[0].connectEndDate != nil)
        #expect(transactions[1].isReusedConnection && transactions[1].connectEndDate == nil)
        // TLS inside the connect, on the new connection only.
        #expect(transactions[0].secureConnectionStartDate != nil && transactions[0].secureConnectionEndDate != nil)
        #expect(transactions[1].secureConnectionStartDate == nil && transactions[1].secureConnectionEndDate == nil)
        #expect(transactions.allSatisfy(inOrder))
    }

    @Test("The User-Agent sent: the options' (a name of the app's own), none when it is nil, the request's own over either")
    func userAgent() async throws {
        let agent = HTTPField.Name("User-Agent")!
        func sent(_ agentSetting: String??, own: String? = nil) async throws -> [String] {
            var request = LoadRequest(url: try Nginx.http("/hello.txt"))
            if let own { request.headerFields[agent] = own }
            let session = try Nginx.session { configuration in
                if let agentSetting { configuration.handlerOptions[HTTPClientOptions.self].userAgent = agentSetting }
            }
            let recorder = Recorder()
            _ = try await session.data(for: request, delegate: recorder)
            return recorder.collected.withLock { $0.first?.request.headerFields[values: agent] } ?? ["(nothing collected)"]
        }
        #expect(try await sent(.none) == ["swift-url-loader/0.1"])
        #expect(try await sent(.some("demo/2")) == ["demo/2"])
        #expect(try await sent(.some(nil)) == [])
        #expect(try await sent(.some(nil), own: "mine/1") == ["mine/1"])
        // A line break in the setting cannot start another field: it goes as spaces, in the one field, as the
        // scripted server's echo of the head it read shows.
        let session = try Nginx.session { $0.handlerOptions[HTTPClientOptions.self].userAgent = "evil/1\r\nX-Injected: yes" }
        let (echo, _) = try await session.data(from: ScriptedServer.shared.url("/echo-headers"))
        let lines = String(decoding: echo, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.contains("user-agent: evil/1  X-Injected: yes") && !lines.contains { $0.hasPrefix("x-injected") }, "\(lines)")
    }
}
