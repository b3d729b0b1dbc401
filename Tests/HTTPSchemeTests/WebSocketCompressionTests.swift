import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// Per-message compression (RFC 7692) against the websockets package, which takes `permessage-deflate` when offered.
@Suite("ws: per-message compression (permessage-deflate) against a real server")
struct WebSocketCompressionTests {
    private func ws(_ path: String) throws -> URL {
        let servers = try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
        return URL(string: "ws://127.0.0.1:\(servers.port)\(path)")!
    }

    @Test("Offered by default and agreed: compressed messages both ways come back whole, in order, the context kept between them")
    func agreedAndEchoed() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/extensions"))
        socket.resume()
        let agreed = try await socket.receive()
        guard case .string(let extensions) = agreed else { Issue.record("\(agreed)"); return }
        #expect(extensions.hasPrefix("permessage-deflate"), "\(extensions)")
        #expect(socket.response?.headerFields[.secWebSocketExtensions]?.hasPrefix("permessage-deflate") == true)
        // Repeated text (each message's context builds on the last), bytes that do not compress, and an empty message.
        let text = String(repeating: "a compressible line of text\n", count: 5_000)
        let noise = Data((0..<200_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) })
        for message: WebSocketTask.Message in [.string(text), .string(text), .data(noise), .string(""), .data(Data())] {
            try await socket.send(message)
        }
        #expect(try await socket.receive() == .string(text))
        #expect(try await socket.receive() == .string(text))
        #expect(try await socket.receive() == .data(noise))
        #expect(try await socket.receive() == .string(""))
        let empty = try await socket.receive()
        #expect(empty == .data(Data()), "\(empty)")
        socket.cancel(with: .normalClosure, reason: nil)
    }

    @Test("Agreed, every message we send goes compressed on the wire (RSV1, as the server saw it); not offered, none does")
    func compressedOnTheWire() async throws {
        for offered in [true, false] {
            let socket = try Nginx.session().webSocketTask(with: try ws("/wire"))
            socket.offersCompression = offered
            socket.resume()
            let sent: [WebSocketTask.Message] = [.string(String(repeating: "wire ", count: 2_000)), .data(Data(count: 70_000)), .string(""), .string("short")]
            for message in sent { try await socket.send(message) }
            var seen: [WebSocketTask.Message] = []
            for _ in sent { seen.append(try await socket.receive()) }
            #expect(seen == Array(repeating: .string(offered ? "compressed" : "plain"), count: sent.count), "offered: \(offered)")
            socket.cancel(with: .normalClosure, reason: nil)
        }
    }

    @Test("A compressed message in three frames (RSV1 on the first alone) is inflated whole")
    func fragmented() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/fragmented"))
        #expect(try await socket.receive() == .string(String(repeating: "compressible ", count: 1000) + String(repeating: "text ", count: 1000) + "end"))
        socket.cancel(with: .normalClosure, reason: nil)
    }

    @Test("offersCompression = false: nothing offered, none agreed, messages plain")
    func notOffered() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/extensions"))
        socket.offersCompression = false
        #expect(try await socket.receive() == .string(""))
        try await socket.send(.string("plain"))
        #expect(try await socket.receive() == .string("plain"))
        socket.cancel(with: .normalClosure, reason: nil)
    }

    @Test("With offersCompression false, a server that takes permessage-deflate anyway fails the opening (not offered)")
    func takenUnasked() async throws {
        let url = try ws("/forced-deflate")
        let socket = try Nginx.session().webSocketTask(with: url)
        socket.offersCompression = false
        let error = await loadError { _ = try await socket.receive() }
        #expect(error?.code == .badServerResponse, "\(String(describing: error))")
        #expect(error?.reason?.contains("not offered") == true, "\(String(describing: error?.reason))")
        // Offered, the same answer is taken.
        let offered = try Nginx.session().webSocketTask(with: url)
        #expect(try await offered.receive() == .string("unreadable"))
        offered.cancel(with: .normalClosure, reason: nil)
    }

    @Test("A small message that inflates past maximumMessageSize ends the socket with 1009 and dataLengthExceedsMaximum, never held whole")
    func bomb() async throws {
        let socket = try Nginx.session().webSocketTask(with: try ws("/bomb"))
        socket.maximumMessageSize = 1 << 20
        let error = await loadError { _ = try await socket.receive() }
        #expect(error?.code == .dataLengthExceedsMaximum, "\(String(describing: error))")
        #expect(error?.url == (try ws("/bomb")))
        #expect(socket.closeCode == .messageTooBig)
        // Stopped while it inflated, not after: NIO's aggregator would say "passed the maximum" of a message held whole.
        #expect(error?.reason?.contains("inflates past the maximum") == true, "\(String(describing: error?.reason))")
        // Raised, the same message arrives whole.
        let roomy = try Nginx.session().webSocketTask(with: try ws("/bomb"))
        roomy.maximumMessageSize = 16 << 20
        #expect(try await roomy.receive() == .data(Data(count: 8 << 20)))
        roomy.cancel(with: .normalClosure, reason: nil)
    }

    @Test("An answer the offer did not allow (client_max_window_bits, an unknown extension) fails the opening with badServerResponse naming it")
    func badAnswers() async throws {
        for (path, named) in [("/bad-extension", "client_max_window_bits=10"), ("/unoffered-extension", "x-unknown")] {
            let url = try ws(path)
            let socket = try Nginx.session().webSocketTask(with: url)
            let error = await loadError { _ = try await socket.receive() }
            #expect(error?.code == .badServerResponse, "\(path): \(String(describing: error))")
            #expect(error?.url == url)
            #expect(error?.reason?.contains(named) == true, "\(path): \(String(describing: error?.reason))")
        }
    }
}
