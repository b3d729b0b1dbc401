import Foundation
import HTTPTypes
import Loader
import Synchronization
import TestSupport

/// `echo:` answers with its own URL as the body, and echoes the request's `X-Echo` and `Authorization`
/// fields back (the latter as `X-Authorization`).
final class EchoHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["echo"] }

    override func load() async throws {
        let body = Data(request.url.absoluteString.utf8)
        var response = LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(body.count))
        if let echo = request.headerFields[HTTPField.Name("X-Echo")!] {
            response.headerFields[HTTPField.Name("X-Echo")!] = echo
        }
        if let authorization = request.headerFields[.authorization] {
            response.headerFields[HTTPField.Name("X-Authorization")!] = authorization
        }
        response.headerFields[HTTPField.Name("X-Handler")!] = "echo"
        client.handler(self, didReceive: response)
        try await client.handler(self, deliver: body)
    }
}

/// A second `echo:` handler, to test which registration wins.
final class LoudEchoHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["echo"] }

    override func load() async throws {
        let body = Data(request.url.absoluteString.uppercased().utf8)
        var response = LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(body.count))
        response.headerFields[HTTPField.Name("X-Handler")!] = "loud"
        client.handler(self, didReceive: response)
        try await client.handler(self, deliver: body)
    }
}

/// Counts events shared between a test and the handlers it starts.
final class Probe: Sendable {
    private let state = Locked<[String: Int]>([:])
    func bump(_ key: String, by amount: Int = 1) { state.withLock { $0[key, default: 0] += amount } }
    func set(_ key: String, _ value: Int) { state.withLock { $0[key] = value } }
    func max(_ key: String, _ value: Int) { state.withLock { $0[key] = Swift.max($0[key] ?? 0, value) } }
    subscript(_ key: String) -> Int { state.withLock { $0[key] ?? 0 } }
}

/// Probes are found by the URL's host so each test has its own: `stream://<probe-id>/<bytes>`.
enum Probes {
    private static let table = Locked<[String: Probe]>([:])
    static func make() -> (String, Probe) {
        let id = "p" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        let probe = Probe()
        table.withLock { $0[id] = probe }
        return (id, probe)
    }
    static func find(_ url: URL) -> Probe { table.withLock { $0[url.host ?? ""] } ?? Probe() }
}

/// `stream://probe/N` sends N bytes (a repeating pattern) in 64 KiB chunks with backpressure, recording
/// how many bytes it produced in the probe ("produced") and whether it was stopped ("stopped");
/// `stream://probe/N?pace=MS` waits MS milliseconds before each chunk, so a test can act in the middle.
final class StreamHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["stream"] }

    static func pattern(_ offset: Int, _ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: (offset + $0) &* 31 &+ 7) })
    }

    override func load() async throws {
        let probe = Probes.find(request.url)
        let total = Int(request.url.lastPathComponent) ?? 0
        client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "application/octet-stream", expectedContentLength: Int64(total)))
        var sent = 0
        let chunk = 64 * 1024
        let template = Self.pattern(0, chunk)
        let pace = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems?
            .first { $0.name == "pace" }?.value.flatMap(Int.init)
        while sent < total {
            if let pace { try await Task.sleep(for: .milliseconds(pace)) }
            let count = Swift.min(chunk, total - sent)
            // The pattern repeats every 64 KiB, so one template serves every chunk.
            try await client.handler(self, deliver: count == chunk ? template : template.prefix(count))
            sent += count
            probe.set("produced", sent)
        }
    }

    override func stopLoading() {
        Probes.find(request.url).bump("stopped")
        super.stopLoading()
    }
}

/// `hang://probe` sends a response and then nothing, until it is stopped.
final class HangHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["hang"] }

    override func load() async throws {
        if request.url.path != "/before-response" {
            client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: nil))
            client.handler(self, didLoad: Data("partial".utf8))
        }
        Probes.find(request.url).bump("started")
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    override func stopLoading() {
        Probes.find(request.url).bump("stopped")
        super.stopLoading()
    }
}

/// `legacy:` is written URLProtocol-style: startLoading and stopLoading on a dispatch queue of its own,
/// pausing while the reader's buffer is full.
final class LegacyHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: `stopped` is guarded by its lock; everything else is immutable.
    override class var supportedSchemes: Set<String> { ["legacy"] }
    private let queue = DispatchQueue(label: "legacy")
    private let stopped = Locked(false)

    override func startLoading() {
        queue.async { [self] in
            client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: 10 * 100_000))
            send(remaining: 100)
        }
    }

    private func send(remaining: Int) {
        guard !stopped.withLock({ $0 }) else { return }
        guard remaining > 0 else { return client.handlerDidFinishLoading(self) }
        client.handler(self, didLoad: Data(repeating: UInt8(ascii: "0") + UInt8(remaining % 10), count: 100_000))
        client.handler(self, whenReadyForData: { [self] in queue.async { self.send(remaining: remaining - 1) } })
    }

    override func stopLoading() {
        stopped.withLock { $0 = true }
    }
}

/// `bad://probe/<case>` breaks the event contract in the way its last path component names.
final class ContractBreakingHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["bad"] }

    override func load() async throws {
        let response = LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: nil)
        switch request.url.lastPathComponent {
        case "data-before-response":
            client.handler(self, didLoad: Data("early".utf8))
            client.handler(self, didReceive: response)
        case "two-responses":
            client.handler(self, didReceive: response)
            client.handler(self, didReceive: response)
        case "events-after-finish":
            client.handler(self, didReceive: response)
            client.handler(self, didLoad: Data("ok".utf8))
            client.handlerDidFinishLoading(self)
            client.handler(self, didLoad: Data("late".utf8))
            client.handlerDidFinishLoading(self)
        case "finish-without-response":
            client.handlerDidFinishLoading(self)
        case "batch-after-response":
            client.handler(self, didReceive: response)
            client.handler(self, didReceive: response, body: Data("x".utf8), finished: true)
        case "batch-whole":
            client.handler(self, didReceive: response, body: Data("Hello".utf8), finished: true)
        case "batch-empty":
            client.handler(self, didReceive: response, body: Data(), finished: true)
        case "batch-then-more":
            client.handler(self, didReceive: response, body: Data("a".utf8), finished: false)
            try await client.handler(self, deliver: Data("bc".utf8))
        default:
            throw LoadError(.badURL, url: request.url, reason: "unknown case")
        }
    }
}

/// `upload://probe` reads the request body and reports progress, answering with the body's SHA-less
/// summary: its byte count as text.
final class UploadCountingHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["upload"] }

    override func load() async throws {
        var total: Int64 = 0
        let expected = request.body?.knownLength
        if let body = request.body {
            for try await chunk in body.chunks(chunkSize: 1000) {
                total += Int64(chunk.count)
                client.handler(self, didSendBodyData: total, totalBytesExpectedToSend: expected)
            }
        }
        let text = Data("\(total)".utf8)
        client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(text.count)))
        client.handler(self, didLoad: text)
    }
}

/// `hop://a/...` redirects to `echo:` (a handler-proposed redirect), `hop://loop/…` to itself;
/// `hop://carry/...` to `echo:` with a copy of its own request, header fields and all, as a ported
/// URLProtocol that only changes the URL would.
final class HopHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["hop"] }

    override func load() async throws {
        var next = LoadRequest(url: request.url)
        switch request.url.host {
        case "loop": break
        case "carry":
            next = request
            next.url = URL(string: "echo:" + request.url.path)!
        default:
            next.url = URL(string: "echo:" + request.url.path)!
        }
        client.handler(self, wasRedirectedTo: next, redirectResponse: LoadResponse(url: request.url, mimeType: nil, expectedContentLength: 0))
    }
}

/// Collects delegate events in order.
final class RecordingDelegate: LoaderSessionDelegate {
    let events = Locked<[String]>([])
    let invalidated = Locked(false)

    func loadTask(_ task: LoadTask, didReceive response: LoadResponse) { events.withLock { $0.append("response") } }
    func loadTask(_ task: LoadTask, didReceive data: Data) { events.withLock { $0.append("data:\(data.count)") } }
    func loadTask(_ task: LoadTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        events.withLock { $0.append("sent:\(totalBytesSent)/\(totalBytesExpectedToSend ?? -1)") }
    }
    func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?) {
        events.withLock { $0.append("wrote:\(totalBytesWritten)") }
    }
    func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {
        events.withLock { $0.append(error.map { "failed:\($0.code)" } ?? "completed") }
    }
    func session(_ session: LoaderSession, didBecomeInvalidWithError error: LoadError?) {
        invalidated.withLock { $0 = true }
    }
}

/// A session with every test handler registered on it (not in the process-wide registry).
func testSession(
    middleware: [any LoadMiddleware] = [],
    delegate: (any LoaderSessionDelegate)? = nil,
    configure: (inout LoaderSession.Configuration) -> Void = { _ in }
) -> LoaderSession {
    var configuration = LoaderSession.Configuration.ephemeral
    configuration.handlerClasses = [
        EchoHandler.self, StreamHandler.self, HangHandler.self, LegacyHandler.self,
        ContractBreakingHandler.self, UploadCountingHandler.self, HopHandler.self,
    ]
    configuration.middleware = middleware
    configure(&configuration)
    return LoaderSession(configuration: configuration, delegate: delegate)
}

/// Runs the rest of the chain in a task of its own that is cancelled before it calls next.
struct PreCancelledNext: LoadMiddleware {
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        let inner = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await next(request)
        }
        return try await inner.value
    }
}
