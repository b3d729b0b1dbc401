import Foundation
import HTTPTypes
import Loader
import Testing

@Suite("Registry: which handler loads a request")
struct RegistryTests {
    private func handlerName(_ session: LoaderSession, _ url: String = "echo:x") async throws -> String? {
        try await session.data(from: URL(string: url)!).1.headerFields[HTTPField.Name("X-Handler")!]
    }

    @Test("The most recently registered handler that accepts a request wins")
    func laterWins() async throws {
        let registry = SchemeRegistry(handlers: [EchoHandler.self, LoudEchoHandler.self])
        #expect(registry.handlerClass(for: LoadRequest(url: URL(string: "echo:x")!)) == LoudEchoHandler.self)
        registry.register(EchoHandler.self)
        #expect(registry.handlerClass(for: LoadRequest(url: URL(string: "ECHO:x")!)) == EchoHandler.self)
        registry.unregister(EchoHandler.self)
        #expect(registry.handlerClass(for: LoadRequest(url: URL(string: "echo:x")!)) == LoudEchoHandler.self)
        #expect(registry.handlers.count == 1)
    }

    @Test("A session's own handlers override the process-wide ones, for that session only")
    func sessionOverridesDefault() async throws {
        SchemeRegistry.default.register(EchoHandler.self)
        defer { SchemeRegistry.default.unregister(EchoHandler.self) }
        var configuration = LoaderSession.Configuration.default
        configuration.handlerClasses = [LoudEchoHandler.self]
        let overriding = LoaderSession(configuration: configuration)
        let plain = LoaderSession()
        #expect(try await handlerName(overriding) == "loud")
        #expect(try await handlerName(plain) == "echo")
        #expect(String(decoding: try await overriding.data(from: URL(string: "echo:x")!).0, as: UTF8.self) == "ECHO:X")
    }

    @Test("Registering on a session at runtime takes effect for the next load")
    func runtimeRegistration() async throws {
        let session = testSession()
        #expect(try await handlerName(session) == "echo")
        session.registry.register(LoudEchoHandler.self)
        #expect(try await handlerName(session) == "loud")
    }

    @Test("A handler with no declared schemes is asked about every request, in registration order")
    func wildcardHandler() async throws {
        final class EverythingHandler: SchemeHandler, @unchecked Sendable {
            override class func canInit(with request: LoadRequest) -> Bool { request.url.path.hasSuffix(".all") }
            override func load() async throws {
                var response = LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: 0)
                response.headerFields[HTTPField.Name("X-Handler")!] = "everything"
                client.handler(self, didReceive: response)
            }
        }
        let registry = SchemeRegistry(handlers: [EchoHandler.self, EverythingHandler.self])
        #expect(registry.handlerClass(for: LoadRequest(url: URL(string: "echo:x.all")!)) == EverythingHandler.self)
        #expect(registry.handlerClass(for: LoadRequest(url: URL(string: "echo:x")!)) == EchoHandler.self)
        registry.register(EchoHandler.self)
        #expect(registry.handlerClass(for: LoadRequest(url: URL(string: "echo:x.all")!)) == EchoHandler.self)
        #expect(registry.handlerClass(for: LoadRequest(url: URL(string: "other:x.all")!)) == EverythingHandler.self)
    }

    @Test("Registering while loads run is safe")
    func registerDuringLoads() async throws {
        let session = testSession()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for _ in 0..<200 {
                    session.registry.register(LoudEchoHandler.self)
                    session.registry.unregister(LoudEchoHandler.self)
                    await Task.yield()
                }
            }
            for index in 0..<200 {
                group.addTask {
                    let (data, _) = try await session.data(from: URL(string: "echo:r\(index)")!)
                    let text = String(decoding: data, as: UTF8.self)
                    #expect(text == "echo:r\(index)" || text == "ECHO:R\(index)")
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("canonicalRequest is applied before the handler sees the request")
    func canonicalRequest() async throws {
        final class LowercasingHandler: SchemeHandler, @unchecked Sendable {
            override class var supportedSchemes: Set<String> { ["lower"] }
            override class func canonicalRequest(for request: LoadRequest) -> LoadRequest {
                var request = request
                request.url = URL(string: request.url.absoluteString.lowercased())!
                return request
            }
            override func load() async throws {
                let body = Data(request.url.absoluteString.utf8)
                client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(body.count)))
                client.handler(self, didLoad: body)
            }
        }
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [LowercasingHandler.self]
        let (data, _) = try await LoaderSession(configuration: configuration).data(from: URL(string: "lower:MiXeD")!)
        #expect(String(decoding: data, as: UTF8.self) == "lower:mixed")
        #expect(LowercasingHandler.requestIsCacheEquivalent(LoadRequest(url: URL(string: "lower:A")!), to: LoadRequest(url: URL(string: "lower:a")!)))
    }
}
