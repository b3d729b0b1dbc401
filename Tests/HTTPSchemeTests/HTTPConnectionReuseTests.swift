import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

@Suite("http: when a connection may carry the next request (an in-process NIO server)")
struct HTTPConnectionReuseTests {
    let server = ScriptedServer.shared

    /// A session with one connection per host, so that every request after the first waits for it.
    /// A session of one connection per host. The request timeout is a bound for a failure, not an expected time: at
    /// 10 s, a load in the first seconds of a full run (every test starting at once on Swift's two threads here) once
    /// timed out in a fresh-clone CI run.
    private func oneConnectionSession(timeout: TimeInterval = 60) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.handlerOptions[HTTPClientOptions.self].maximumConnectionsPerHost = 1
        configuration.timeoutIntervalForRequest = timeout
        return LoaderSession(configuration: configuration)
    }

    @Test("Bytes after a response's end are the server's error: the waiting request gets its own response, never them")
    func extraResponseNotHandedOn() async throws {
        try await extraResponseNotHandedOn(path: "/extra-response")
    }

    @Test("Bytes after a response's end that stop inside a head (parsed, not yet a response) are not handed on either")
    func cutExtraResponseNotHandedOn() async throws {
        try await extraResponseNotHandedOn(path: "/extra-response-split")
    }

    @Test("The start of a head sent on an idle connection closes it: the next request gets its own response on a new one")
    func strayBytesWhileIdle() async throws {
        let session = oneConnectionSession()
        let connection = HTTPField.Name("X-Connection")!
        let (first, firstResponse) = try await session.data(from: server.url("/late-stray"))
        #expect(String(decoding: first, as: UTF8.self) == "ok")
        // The stray bytes come 100 ms after the response; the next request comes well after them.
        try await Task.sleep(for: .milliseconds(500))
        let (second, secondResponse) = try await session.data(from: server.url("/ok"))
        #expect(String(decoding: second, as: UTF8.self) == "ok")
        #expect(secondResponse.headerFields[connection] != nil && secondResponse.headerFields[connection] != firstResponse.headerFields[connection])
    }

    @Test("A 204 with bytes after it (a body it cannot have) stands, with no body; the next request gets its own response on a new connection")
    func noContentWithBody() async throws {
        let session = oneConnectionSession()
        let connection = HTTPField.Name("X-Connection")!
        let (first, firstResponse) = try await session.data(from: server.url("/no-content-with-body"))
        #expect(firstResponse.status == .noContent && first.isEmpty, "\(firstResponse) \(first.count) bytes")
        let (second, secondResponse) = try await session.data(from: server.url("/ok"))
        #expect(String(decoding: second, as: UTF8.self) == "ok", "the next request was given the stray bytes")
        #expect(secondResponse.headerFields[connection] != nil && secondResponse.headerFields[connection] != firstResponse.headerFields[connection])
    }

    private func extraResponseNotHandedOn(path: String) async throws {
        let session = oneConnectionSession()
        let first = Task { try await session.data(from: server.url(path)) }
        // The second waits for the only connection, which the first holds until its answer comes (200 ms).
        try await Task.sleep(for: .milliseconds(50))
        let second = Task { try await session.data(from: server.url("/ok")) }
        let (firstData, _) = try await first.value
        let (secondData, secondResponse) = try await second.value
        #expect(String(decoding: firstData, as: UTF8.self) == "first")
        #expect(String(decoding: secondData, as: UTF8.self) == "ok", "the waiting request was given the unasked-for response")
        #expect(secondResponse.headerFields[HTTPField.Name("X-Connection")!] != nil)
    }

    @Test("A Content-Length with a space after it (optional whitespace) still lets the connection carry the next request")
    func spacedLengthReused() async throws {
        let session = oneConnectionSession()
        let (first, firstResponse) = try await session.data(from: server.url("/length-spaced"))
        let (second, secondResponse) = try await session.data(from: server.url("/length-spaced"))
        #expect(String(decoding: first, as: UTF8.self) == "hi" && String(decoding: second, as: UTF8.self) == "hi")
        let connection = firstResponse.headerFields[HTTPField.Name("X-Connection")!]
        #expect(connection != nil && secondResponse.headerFields[HTTPField.Name("X-Connection")!] == connection,
                "the second request went on another connection")
    }

    @Test("A connection that switched protocols (101) is not reused: the next request opens another; a Content-Length on the 101 measures no body")
    func switchedConnectionNotReused() async throws {
        // Reused, the second load would wait out its timeout: 20 s, so that a busy machine's pause does not; and
        // begun once the pool is calm, after the run's first seconds (see poolIsResponsive).
        await poolIsResponsive()
        let session = oneConnectionSession(timeout: 20)
        // Asked for: a 101 nobody asked for is refused (HTTPMisbehaviourTests.unaskedSwitchAndStatusZero).
        func upgrading(_ path: String) -> LoadRequest {
            var request = LoadRequest(url: server.url(path))
            request.headerFields[.upgrade] = "foo"
            request.headerFields[.connection] = "upgrade"
            return request
        }
        let (_, switched) = try await session.data(for: upgrading("/switching"))
        #expect(switched.status?.code == 101)
        // A Content-Length on it measures no body (NIO's parser reads none after a 101): the 101 stands all the same.
        let (_, measured) = try await session.data(for: upgrading("/switching-with-length"))
        #expect(measured.status?.code == 101)
        // On the switched connection NIO's parser reads nothing more: reused, this load would wait out its timeout.
        let (data, response) = try await session.data(from: server.url("/ok"))
        #expect(String(decoding: data, as: UTF8.self) == "ok")
        #expect(response.status == .ok)
    }

    @Test("Waiters cancelled as connections come free never strand the others waiting for one")
    func cancelledWaitersPassSlotsOn() async throws {
        // Every response closes its connection, so each end frees a slot for the first waiter to open
        // another; a waiter cancelled just then must hand that slot on. Rounds make the race likely.
        let session = oneConnectionSession()
        for round in 0..<20 {
            let loads = (0..<8).map { _ in Task { try await session.data(from: server.url("/close")) } }
            // Cancel every other load at staggered moments while the others are served in turn.
            for (index, load) in loads.enumerated() where index % 2 == 1 {
                try await Task.sleep(for: .microseconds(150 * (index + round % 3)))
                load.cancel()
            }
            var served = 0
            for (index, load) in loads.enumerated() {
                do {
                    let (data, _) = try await load.value
                    #expect(String(decoding: data, as: UTF8.self) == "bye")
                    served += 1
                } catch let error as LoadError {
                    // Only a cancelled load may fail, and only as cancelled (a stranded one would time out).
                    #expect(index % 2 == 1 && error.code == .cancelled, "round \(round), load \(index): \(error)")
                }
            }
            #expect(served >= 4, "round \(round): the loads never cancelled were all served")
        }
    }
}
