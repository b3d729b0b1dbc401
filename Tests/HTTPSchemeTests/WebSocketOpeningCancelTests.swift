import Foundation
import HTTPScheme
import Loader
import NIOCore
import Synchronization
import TestSupport
import Testing

/// Calls waiting for a socket to open, when the opening waits on a server that never answers the handshake.
@Suite("ws: cancelled while it opens")
struct WebSocketOpeningCancelTests {
    /// A socket to a listener on 127.0.0.1 that takes the connection and never answers the handshake, with `call`
    /// waiting in a task of its own once the connection is taken; returns what ended `call`, if it ended after `end`.
    private func waitingCall(end: @escaping @Sendable (WebSocketTask, Task<Void, Never>) -> Void) async throws -> LoadError? {
        let silent = try CountingListener { _, _ in }
        let socket = try Nginx.session().webSocketTask(with: URL(string: "ws://127.0.0.1:\(silent.port)/")!)
        let outcome = Locked<LoadError??>(nil)
        let call = Task {
            let error = await loadError { _ = try await socket.receive() }
            outcome.withLock { $0 = .some(error) }
        }
        #expect(await eventually { silent.acceptedCount == 1 }, "the connection was not taken")
        end(socket, call)
        // Well under the handshake's 30 s timeout, which alone would end it otherwise.
        let ended = await eventually(within: 5) { outcome.withLock { $0 != nil } }
        #expect(ended, "the waiting call still waited for the opening")
        socket.cancel()
        await call.value
        return outcome.withLock { $0 ?? nil }
    }

    @Test("The socket's cancel() ends a receive() waiting for a connect that never completes at once, cancelled")
    func cancelledWhileConnecting() async throws {
        let full = try FullBacklog()
        defer { full.close() }
        let socket = try Nginx.session().webSocketTask(with: URL(string: "ws://127.0.0.1:\(full.port)/")!)
        let outcome = Locked<LoadError??>(nil)
        let call = Task {
            let error = await loadError { _ = try await socket.receive() }
            outcome.withLock { $0 = .some(error) }
        }
        // The connect is under way (its SYN dropped by the full queue): a moment for the call to wait on it.
        try await Task.sleep(for: .milliseconds(300))
        socket.cancel()
        // Well under the connect's 30 s timeout.
        let ended = await eventually(within: 5) { outcome.withLock { $0 != nil } }
        #expect(ended, "the waiting call still waited for the connect")
        if !ended { call.cancel() }
        await call.value
        let error = outcome.withLock { $0 ?? nil }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }

    @Test("The socket's cancel() ends a receive() waiting for the handshake at once, cancelled")
    func socketCancelled() async throws {
        let error = try await waitingCall { socket, _ in socket.cancel() }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }

    @Test("Cancelling the calling task ends its receive() waiting for the handshake at once, cancelled")
    func callerCancelled() async throws {
        let error = try await waitingCall { _, call in call.cancel() }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }
}

/// A listening socket on 127.0.0.1 whose accept queue is full (backlog 0, one connection waiting in it, never
/// accepted): a further connect's SYN is dropped, and the connect waits until its timeout.
private struct FullBacklog {
    let port: Int
    private let listener: Int32
    private let filler: Int32

    init() throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listening, $0, length) == 0 && listen(listening, 0) == 0 && getsockname(listening, $0, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        // One connection fills a queue of backlog 0.
        let filling = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filling, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw POSIXError(.ECONNREFUSED) }
        (listener, filler, port) = (listening, filling, Int(UInt16(bigEndian: address.sin_port)))
    }

    func close() {
        _ = Glibc.close(filler)
        _ = Glibc.close(listener)
    }
}
