import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

@Suite("http: callers' tasks on an HTTP event loop (HTTPSchemeHandler.taskExecutor())")
struct HTTPEventLoopExecutorTests {
    let server = ScriptedServer.shared

    private func session() -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        return LoaderSession(configuration: configuration)
    }

    @Test("Sequential requests resume on the executor's loop and share one keep-alive connection")
    func sequentialOnTheLoop() async throws {
        let session = session()
        let executor = HTTPSchemeHandler.taskExecutor()
        let connection = HTTPField.Name("X-Connection")!
        try await withTaskExecutorPreference(executor) {
            var connections = Set<String>()
            for _ in 0..<20 {
                let (data, response) = try await session.data(from: server.url("/ok"))
                #expect(String(decoding: data, as: UTF8.self) == "ok")
                #expect(executor.eventLoop.inEventLoop, "the caller resumed off the executor's loop")
                connections.insert(response.headerFields[connection] ?? "none")
            }
            #expect(connections.count == 1, "connections used: \(connections.sorted())")
        }
    }

    @Test("Concurrent requests from child tasks on the loop all get their bodies")
    func concurrentOnTheLoop() async throws {
        let session = session()
        let bodies = try await withTaskExecutorPreference(HTTPSchemeHandler.taskExecutor()) {
            try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<64 {
                    group.addTask {
                        var request = LoadRequest(url: server.url("/echo-headers"))
                        request.headerFields[HTTPField.Name("X-Index")!] = String(index)
                        let (data, _) = try await session.data(for: request)
                        return String(decoding: data, as: UTF8.self)
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
        }
        // Each body echoes its own request's header: no response went to the wrong caller.
        let indices = bodies.compactMap { body in
            body.split(separator: "\n").first { $0.hasPrefix("x-index: ") }.flatMap { Int($0.dropFirst("x-index: ".count)) }
        }
        #expect(indices.sorted() == Array(0..<64))
    }

    @Test("A failure on the loop is still a LoadError naming the URL")
    func failureOnTheLoop() async throws {
        let session = session()
        let url = server.url("/truncated")
        let error = await withTaskExecutorPreference(HTTPSchemeHandler.taskExecutor()) {
            await loadError { _ = try await session.data(from: url) }
        }
        #expect(error?.code == .networkConnectionLost)
        #expect(error?.url == url)
    }
}
