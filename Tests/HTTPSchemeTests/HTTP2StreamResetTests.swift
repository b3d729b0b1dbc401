import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// Streams a server ends with `RST_STREAM`, from a scripted in-process HTTP/2 server (nginx resets no stream on
/// demand): a reset is the load's error, naming the stream's code; a refused stream goes again, whatever its method.
@Suite("http: HTTP/2 streams the server resets (a scripted server)")
struct HTTP2StreamResetTests {
    private let server: ScriptedHTTP2Server

    init() throws {
        server = try ScriptedHTTP2Server()
    }

    private func session() -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.handlerOptions[HTTPClientOptions.self].http2PriorKnowledge = true
        return LoaderSession(configuration: configuration)
    }

    /// A session whose connection to the server has carried a load already (a 404): its next load's stream is a reused
    /// lease, sent without a task of its own.
    private func sessionInUse() async throws -> LoaderSession {
        let session = session()
        let (_, warm) = try await session.data(from: url("/warm"))
        #expect(warm.status?.code == 404)
        return session
    }

    private func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(server.port)\(path)")!
    }

    @Test("A stream reset before any response fails the load with networkConnectionLost naming the code (INTERNAL_ERROR); it is not sent again, on a new connection or one in use")
    func resetBeforeResponse() async throws {
        let url = url("/reset")
        let error = await loadError { _ = try await session().data(from: url) }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.url == url)
        let reset = try #require(error?.underlying as? HTTP2StreamReset, "\(String(describing: error?.underlying))")
        #expect(reset.errorCode == 2 && reset.errorCodeName == "INTERNAL_ERROR")
        #expect(error?.reason?.contains("HTTP/2 stream 1 was reset with INTERNAL_ERROR") == true, "\(String(describing: error?.reason))")
        #expect(server.requests(for: "/reset") == 1)

        // On a connection that has carried a load already (a stream of it is a reused lease).
        let inUse = try await sessionInUse()
        let again = await loadError { _ = try await inUse.data(from: url) }
        #expect(again?.underlying is HTTP2StreamReset, "\(String(describing: again))")
        #expect(server.requests(for: "/reset") == 2)
    }

    @Test("A :status that is not three digits (1000, 2000, -1, 20x, empty, 99) fails the load with badServerResponse naming it, and the process lives on")
    func malformedStatus() async throws {
        let session = try await sessionInUse()
        // Before, 1000 and 2000 trapped in HTTPTypes, -1 and the empty value in NIO: the process ended.
        for status in ["1000", "2000", "-1", "20x", "", "99"] {
            let url = url("/status/\(status)")
            let error = await loadError { _ = try await session.data(from: url) }
            #expect(error?.code == .badServerResponse, "\(status): \(String(describing: error))")
            #expect(error?.url == url)
            #expect(error?.reason?.contains("'\(status)'") == true, "\(status): \(String(describing: error?.reason))")
        }
        // The connection serves on: only the stream was at fault.
        let (_, after) = try await session.data(from: url("/after"))
        #expect(after.status?.code == 404)
    }

    @Test("A stream reset in the middle of its body fails the load: the 1,000 of 10,000 bytes never pass for the whole body")
    func resetMidBody() async throws {
        let url = url("/reset-mid-body")
        let error = await loadError { _ = try await session().data(from: url) }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect((error?.underlying as? HTTP2StreamReset)?.errorCode == 2, "\(String(describing: error?.underlying))")

        // Streamed, the bytes that came are read, then the error.
        let (bytes, response) = try await session().bytes(from: url)
        #expect(response.status?.code == 200)
        var received = 0
        do {
            for try await chunk in bytes.chunks { received += chunk.count }
            Issue.record("the reset body ended normally after \(received) bytes")
        } catch let error as LoadError {
            #expect(error.underlying is HTTP2StreamReset, "\(error)")
            #expect(received == 1000)
        }
    }

    @Test("A POST whose stream the server refused (REFUSED_STREAM) is sent again: the second answers")
    func refusedOnceResent() async throws {
        var post = LoadRequest(url: url("/refused-once"))
        post.method = .post
        let (data, response) = try await session().upload(for: post, from: Data("body".utf8))
        #expect(response.status?.code == 200)
        #expect(String(decoding: data, as: UTF8.self) == "served 2")
        #expect(server.requests(for: "/refused-once") == 2)
    }

    @Test("A stream refused every time is sent five times at most, then fails saying the server did not process it; alike on a connection in use (the first send without a task)")
    func refusedAlways() async throws {
        let url = url("/refused-always")
        let error = await loadError { _ = try await session().data(from: url) }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(error?.reason?.contains("did not process") == true, "\(String(describing: error?.reason))")
        #expect(server.requests(for: "/refused-always") == 5)

        let inUse = try await sessionInUse()
        let again = await loadError { _ = try await inUse.data(from: url) }
        #expect(again?.reason?.contains("did not process") == true, "\(String(describing: again))")
        #expect(server.requests(for: "/refused-always") == 10)
    }
}
