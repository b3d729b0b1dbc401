import Foundation
import HTTPTypes
import Loader
import TestSupport
import Testing

/// `located://start/<case>` answers 302 with the `Location` fields its case names; `located://end/<path>`
/// answers 200 with its own URL as the body.
final class LocatedHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["located"] }

    static let locations: [String: [String]] = [
        "twice": ["located://end/first", "located://end/second"],
        "bad": ["located://[::1"],
        "space": ["located://end/with space/é"],
        "empty": [""],
    ]

    override func load() async throws {
        guard request.url.host == "start" else {
            client.handler(self, didReceive: LoadResponse(url: request.url, status: .ok, headerFields: [:]))
            try await client.handler(self, deliver: Data(request.url.absoluteString.utf8))
            return
        }
        var fields = HTTPFields()
        for location in Self.locations[String(request.url.path.dropFirst())] ?? [] {
            fields.append(HTTPField(name: .location, value: location))
        }
        client.handler(self, didReceive: LoadResponse(url: request.url, status: .found, headerFields: fields))
        try await client.handler(self, deliver: Data("moved".utf8))
    }
}

@Suite("Redirects: what a server's Location field may hold")
struct RedirectLocationTests {
    private func session() -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [LocatedHandler.self]
        return LoaderSession(configuration: configuration)
    }

    @Test("Of two Location fields the first is followed, not the two joined into one URL")
    func firstOfTwo() async throws {
        let (body, response) = try await session().data(from: URL(string: "located://start/twice")!)
        #expect(String(decoding: body, as: UTF8.self) == "located://end/first")
        #expect(response.url.absoluteString == "located://end/first")
    }

    @Test("A Location that is not a URL fails the load with badServerResponse naming the URL and the field")
    func notAURL() async throws {
        let url = URL(string: "located://start/bad")!
        let error = await loadError { _ = try await session().data(from: url) }
        #expect(error?.code == .badServerResponse, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(error?.reason?.contains("located://[::1") == true, "\(String(describing: error))")
    }

    @Test("A Location with spaces and bytes past ASCII is followed with them percent-encoded, as curl does")
    func unencodedBytes() async throws {
        let (body, _) = try await session().data(from: URL(string: "located://start/space")!)
        #expect(String(decoding: body, as: UTF8.self) == "located://end/with%20space/%C3%A9")
    }

    @Test("An empty Location is no redirect: the 302 and its body are the result")
    func emptyLocation() async throws {
        let (body, response) = try await session().data(from: URL(string: "located://start/empty")!)
        #expect(response.status?.code == 302)
        #expect(String(decoding: body, as: UTF8.self) == "moved")
    }
}
