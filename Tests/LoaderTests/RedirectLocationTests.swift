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
        "plain": ["located://end/plain"],
        "own-fragment": ["located://end/own#mine"],
        "elsewhere": ["located://other/fields"],
        "same-host": ["located://start:99/fields"],
        "escapes": ["located://end/a|b?x=%41&y=%zz#f#g"],
    ]

    override func load() async throws {
        guard request.url.host == "start", request.url.path != "/fields" else {
            client.handler(self, didReceive: LoadResponse(url: request.url, status: .ok, headerFields: [:]))
            // At /fields, the request's method and fields (not the decoding layer's Accept-Encoding), a line each; else its URL.
            let fields = request.headerFields.filter { $0.name != .acceptEncoding }.map { "\($0.name.rawName): \($0.value)" }
            let text = request.url.path == "/fields"
                ? ([request.method.rawValue] + fields).joined(separator: "\n")
                : request.url.absoluteString
            try await client.handler(self, deliver: Data(text.utf8))
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

    @Test("A Location holding both escapes and bytes a URL may not hold keeps its escapes: only the others are encoded")
    func keepsEscapes() async throws {
        let (_, response) = try await session().data(from: URL(string: "located://start/escapes")!)
        // URL(string:) alone made %41 into %2541: another resource.
        #expect(response.url.absoluteString == "located://end/a%7Cb?x=%41&y=%25zz#f%23g")
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

    @Test("A Location without a fragment takes the request's (RFC 9110 §10.2.2); one with its own keeps it")
    func fragments() async throws {
        let (_, inherited) = try await session().data(from: URL(string: "located://start/plain#sec2")!)
        #expect(inherited.url.absoluteString == "located://end/plain#sec2")
        let (_, own) = try await session().data(from: URL(string: "located://start/own-fragment#sec2")!)
        #expect(own.url.absoluteString == "located://end/own#mine")
    }

    @Test("A POST redirected as a GET loses the fields of its body; a caller's Host goes on only to the same host")
    func fieldsAfterRedirect() async throws {
        var post = LoadRequest(url: URL(string: "located://start/elsewhere")!)
        post.method = .post
        post.body = .bytes(Data("x=1".utf8))
        for (name, value) in [("Content-Type", "text/plain"), ("Content-Encoding", "gzip"), ("Content-Language", "fr"),
                              ("Content-Location", "/drafts/1"), ("Host", "api.internal"), ("X-Keep", "yes")] {
            post.headerFields[HTTPField.Name(name)!] = value
        }
        let (elsewhere, _) = try await session().data(for: post)
        #expect(String(decoding: elsewhere, as: UTF8.self) == "GET\nX-Keep: yes")
        post.url = URL(string: "located://start/same-host")!
        let (sameHost, _) = try await session().data(for: post)
        #expect(String(decoding: sameHost, as: UTF8.self) == "GET\nHost: api.internal\nX-Keep: yes")
    }

    @Test("Same origin: a scheme's default port written out or left out is the same port")
    func defaultPorts() {
        func same(_ a: String, _ b: String) -> Bool { RedirectMiddleware.sameOrigin(URL(string: a)!, URL(string: b)!) }
        #expect(same("http://h/a", "http://h:80/b"))
        #expect(same("https://H:443/a", "https://h/b"))
        #expect(same("wss://h/", "wss://h:443/"))
        #expect(!same("http://h/", "http://h:8080/"))
        #expect(!same("http://h/", "https://h:80/"))
        #expect(!same("http://h/", "http://g/"))
        #expect(!same("located://h/", "located://h:1/"))
    }

    @Test("An empty Location is no redirect: the 302 and its body are the result")
    func emptyLocation() async throws {
        let (body, response) = try await session().data(from: URL(string: "located://start/empty")!)
        #expect(response.status?.code == 302)
        #expect(String(decoding: body, as: UTF8.self) == "moved")
    }
}
