import Foundation
import Loader
import LoadURLCommand
import Testing

/// `shout:` answers with the URL's text in capitals: a custom scheme an app would register.
final class ShoutHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["shout"] }

    override func load() async throws {
        let text = String(request.url.absoluteString.dropFirst("shout:".count)).removingPercentEncoding ?? ""
        let body = Data(text.uppercased().utf8)
        client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(body.count)))
        try await client.handler(self, deliver: body)
    }
}

@Suite("loadurl: custom schemes registered by the host app")
struct CLICustomSchemeTests {
    @Test("A custom scheme registered in the process-wide registry is fetched by the command, and data: is unaffected")
    func customScheme() async throws {
        SchemeRegistry.default.register(ShoutHandler.self)
        defer { SchemeRegistry.default.unregister(ShoutHandler.self) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = try LoadURL.parse(["--create-dirs", "-o", directory.appendingPathComponent("a").path, "-o", directory.appendingPathComponent("b").path, "shout:hello%20there", "data:,quiet"])
        let status = await command.execute()
        #expect(status == 0)
        #expect(try String(contentsOf: directory.appendingPathComponent("a"), encoding: .utf8) == "HELLO THERE")
        #expect(try String(contentsOf: directory.appendingPathComponent("b"), encoding: .utf8) == "quiet")
    }

    @Test("The same custom scheme is fetched through a session")
    func customSchemeThroughSession() async throws {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [ShoutHandler.self]
        let (data, response) = try await LoaderSession(configuration: configuration).data(from: URL(string: "shout:abc")!)
        #expect(String(decoding: data, as: UTF8.self) == "ABC")
        #expect(response.mimeType == "text/plain")
    }
}
