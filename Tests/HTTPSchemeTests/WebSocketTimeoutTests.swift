import Foundation
import HTTPScheme
import Loader
import Synchronization
import TestSupport
import Testing

/// The request timeout on a WebSocket: a handshake left unanswered, a server that stops reading what this end sends,
/// and a caller that stops waiting for a send.
@Suite("ws: timeouts and waits that end")
struct WebSocketTimeoutTests {
    private func servers() throws -> TestServers.WebSockets {
        try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
    }

    /// `/no-read`, which reads nothing, over `ws:` or (`secure`) `wss:`.
    private func noRead(secure: Bool) throws -> URL {
        secure ? URL(string: "wss://localhost:\(try servers().tlsPort)/no-read")! : URL(string: "ws://127.0.0.1:\(try servers().port)/no-read")!
    }

    /// A socket whose session has a request timeout of `seconds`.
    private func socket(_ url: URL, timeout seconds: TimeInterval) throws -> WebSocketTask {
        let socket = try Nginx.session { $0.timeoutIntervalForRequest = seconds }.webSocketTask(with: url)
        // Sent as they are: compressed, the repeated bytes the tests send would fit any buffer.
        socket.offersCompression = false
        return socket
    }

    /// A task that cancels `socket` (failing its waiting calls) after `seconds`, unless cancelled first: every wait
    /// of these tests ends.
    private func watchdog(_ socket: WebSocketTask, seconds: Int) -> Task<Void, any Error> {
        Task {
            try await Task.sleep(for: .seconds(seconds))
            socket.cancel(with: .goingAway)
        }
    }

    /// Sends 64 KiB messages one after another, at most `limit` of them (far more than the sockets' buffers hold),
    /// until one fails; with `socket` cancelled if that takes over 30 s. Returns the failure and how many went out.
    private func sendUntilFailure(_ socket: WebSocketTask, limit: Int = 1024, count: Locked<Int> = Locked(0)) async -> (error: LoadError?, sent: Int) {
        let watchdog = watchdog(socket, seconds: 30)
        defer { watchdog.cancel() }
        let message = Data(repeating: 0x5A, count: 64 << 10)
        var sent = 0
        let error = await loadError {
            while sent < limit {
                try await socket.send(.data(message))
                sent += 1
                count.withLock { $0 = sent }
            }
        }
        return (error, sent)
    }

    @Test("A send to a server that reads nothing fails with timedOut after the request timeout, naming the URL; the socket ends with 1006",
          arguments: [false, true])
    func sendToServerThatReadsNothing(secure: Bool) async throws {
        let url = try noRead(secure: secure)
        // Long enough for the handshake's answer, which the request timeout bounds too (a wss handshake under the thread
        // sanitizer took over a second).
        let socket = try socket(url, timeout: 3)
        defer { socket.cancel() }
        let (error, sent) = await sendUntilFailure(socket)
        #expect(error?.code == .timedOut, "\(String(describing: error)) after \(sent) messages")
        #expect(error?.url == url)
        #expect(error?.reason?.contains("read nothing") == true, "\(String(describing: error?.reason))")
        // Some went into the sockets' buffers first: the stall came when they were full, not at the first send.
        #expect(sent > 0 && sent < 1024)
        #expect(socket.closeCode == .abnormalClosure)
        // A ping, and a receive, on the ended socket fail at once with the same cause.
        let ping = await loadError { try await socket.sendPing() }
        #expect(ping?.code == .timedOut, "\(String(describing: ping))")
    }

    @Test("A ping waits the request timeout for its pong, not a fixed 5 s: a server that reads nothing for 7 s answers it then; a 3 s timeout ends it")
    func pongWaitsRequestTimeout() async throws {
        let url = URL(string: "ws://127.0.0.1:\(try servers().port)/slow-reader")!
        let patient = try socket(url, timeout: 30)
        defer { patient.cancel() }
        let watchdog = watchdog(patient, seconds: 40)
        defer { watchdog.cancel() }
        patient.resume()
        try await patient.sendPing()
        #expect(patient.closeCode == nil)

        let hurried = try socket(url, timeout: 3)
        defer { hurried.cancel() }
        hurried.resume()
        let error = await loadError { try await hurried.sendPing() }
        #expect(error?.code == .timedOut && error?.reason?.contains("3 s (the request timeout)") == true, "\(String(describing: error))")
    }

    @Test("A send to a server that reads, if slowly, is not cut short by a request timeout shorter than the whole send")
    func slowReaderWithinTimeout() async throws {
        // /slow-reader reads nothing for 7 s, then reads all: a request timeout of 10 s is never reached by a pause.
        let url = URL(string: "ws://127.0.0.1:\(try servers().port)/slow-reader")!
        let socket = try socket(url, timeout: 10)
        socket.maximumMessageSize = 4 << 20
        defer { socket.cancel() }
        let large = Data(repeating: 0x33, count: 3 << 20)
        let watchdog = watchdog(socket, seconds: 30)
        defer { watchdog.cancel() }
        for _ in 0..<4 { try await socket.send(.data(large)) }
        for _ in 0..<4 { #expect(try await socket.receive() == .data(large)) }
        #expect(socket.closeCode == nil)
    }

    @Test("A server that reads slowly but steadily (about 512 KB/s) is not cut off by a request timeout of 3 s, however much waits")
    func trickleWithinTimeout() async throws {
        let url = URL(string: "ws://127.0.0.1:\(try servers().port)/trickle")!
        let socket = try socket(url, timeout: 3)
        defer { socket.cancel() }
        let watchdog = watchdog(socket, seconds: 60)
        defer { watchdog.cancel() }
        // 6 MiB in 64 KiB messages, going out as the server takes them (the kernel holds 128 KiB unsent at most), over
        // some ten seconds, far past the 3 s timeout, with some leaving every quarter second.
        let message = Data(repeating: 0x44, count: 64 << 10)
        for index in 0..<96 {
            do {
                try await socket.send(.data(message))
            } catch {
                Issue.record("message \(index) failed: \(error)")
                return
            }
        }
        #expect(socket.closeCode == nil)
    }

    @Test("Cancelling the task of a send waiting on a server that reads nothing ends its wait, cancelled; the socket stays open")
    func cancelledSend() async throws {
        let url = try noRead(secure: false)
        let socket = try socket(url, timeout: 60)
        defer { socket.cancel() }
        let outcome = Locked<(error: LoadError?, sent: Int)?>(nil)
        let count = Locked(0)
        let sending = Task {
            let result = await sendUntilFailure(socket, count: count)
            outcome.withLock { $0 = result }
        }
        // The sends go out until the buffers are full; then one waits (the server reads nothing for a minute): the
        // count stays put for a second.
        var last = -1, still = 0
        for _ in 0..<100 where still < 5 {
            try await Task.sleep(for: .milliseconds(200))
            let sent = count.withLock { $0 }
            still = sent == last ? still + 1 : 0
            last = sent
        }
        #expect(still >= 5 && outcome.withLock { $0 } == nil, "the sends did not come to wait")
        sending.cancel()
        let ended = await eventually(within: 5) { outcome.withLock { $0 != nil } }
        #expect(ended, "the cancelled send still waited")
        if !ended { socket.cancel() }
        await sending.value
        let result = outcome.withLock { $0 }
        #expect(result?.error?.code == .cancelled, "\(String(describing: result))")
        #expect(result?.error?.url == url)
        #expect(socket.closeCode == nil, "the socket ended: \(String(describing: socket.closeCode))")
    }

    @Test("A handshake the server never answers fails with timedOut after the request timeout, naming the URL")
    func unansweredHandshake() async throws {
        let silent = try CountingListener { _, _ in }
        let url = URL(string: "ws://127.0.0.1:\(silent.port)/")!
        let socket = try socket(url, timeout: 1)
        let outcome = Locked<LoadError??>(nil)
        let call = Task {
            let error = await loadError { _ = try await socket.receive() }
            outcome.withLock { $0 = .some(error) }
        }
        // Well under the 30 s connect timeout, which bounded the handshake before.
        let ended = await eventually(within: 10) { outcome.withLock { $0 != nil } }
        #expect(ended, "the handshake still waited")
        socket.cancel()
        await call.value
        let error = outcome.withLock { $0 ?? nil }
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(error?.reason?.contains("handshake") == true, "\(String(describing: error?.reason))")
    }
}
