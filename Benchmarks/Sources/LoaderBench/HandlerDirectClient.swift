import Foundation
import HTTPScheme
import Loader
import Synchronization

/// Our HTTP handler driven directly by a minimal client: no session, task, middleware, registry or driver.
/// Between the floor (`nio-minimal`) and the loader, it splits what our layers cost into the handler's share
/// (plan, pool, exchange, forwarder, response fields) and the loader's (everything a session adds).
/// Not a way to use the library: a handler is the loader's to drive.
struct HandlerDirectClient: BenchClient {
    let name: String
    let preferredExecutor: (any TaskExecutor)?

    init(onEventLoop: Bool) {
        name = onEventLoop ? "handler-el" : "handler"
        preferredExecutor = onEventLoop ? HTTPSchemeHandler.taskExecutor() : nil
    }

    func get(_ url: URL) async throws -> Int {
        let client = CollectingClient()
        let handler = HTTPSchemeHandler(request: LoadRequest(url: url), cachedResponse: nil, client: client)
        defer { handler.stopLoading() }
        return try await withUnsafeThrowingContinuation { waiter in
            client.start(waiter)
            handler.startLoading()
        }
    }

    func stream(_ url: URL) async throws -> Int { throw BenchError.usage("\(name) runs the sequential and concurrent scenarios only") }
    func downloadToFile(_ url: URL) async throws -> URL { throw BenchError.usage("\(name) runs the sequential and concurrent scenarios only") }
}

/// Counts a response's body bytes and resumes its waiter at the end, with the count or the failure. The
/// fast path reports a small response in one call; a streamed one through `didLoad` or `deliver`.
private final class CollectingClient: SchemeHandlerClient {
    private struct State {
        var waiter: UnsafeContinuation<Int, any Error>?
        var bytes = 0
    }

    private let state = Mutex(State())

    func start(_ waiter: UnsafeContinuation<Int, any Error>) {
        state.withLock { $0.waiter = waiter }
    }

    private func end(_ result: Result<Int, any Error>?) {
        let waiter = state.withLock { state -> (UnsafeContinuation<Int, any Error>, Int)? in
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, state.bytes)
        }
        guard let (waiter, bytes) = waiter else { return }
        waiter.resume(with: result ?? .success(bytes))
    }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) {}
    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) {}

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse, body: Data, finished: Bool) {
        state.withLock { $0.bytes += body.count }
        if finished { end(nil) }
    }

    func handler(_ handler: SchemeHandler, didLoad data: Data) { state.withLock { $0.bytes += data.count } }
    func handler(_ handler: SchemeHandler, deliver data: Data) async throws { state.withLock { $0.bytes += data.count } }
    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) { callback() }
    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {}
    func handlerDidFinishLoading(_ handler: SchemeHandler) { end(nil) }
    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) { end(.failure(error)) }
}
