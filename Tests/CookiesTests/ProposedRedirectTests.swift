import Cookies
import Foundation
import HTTPTypes
import Loader
import Testing

/// An in-process `http:` handler for `http://app.test`, no network: `/login` answers with a cookie and proposes a
/// redirect to `/show` made from a copy of its own request, header fields and all (as a ported URLProtocol that
/// only changes the URL does); `/show` answers with the `Cookie` field it received.
private final class LoginHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["http"] }

    override func load() async throws {
        if request.url.path == "/login" {
            var next = request
            next.url = URL(string: "http://app.test/show")!
            var response = LoadResponse(url: request.url, status: .found)
            response.headerFields.append(HTTPField(name: .setCookie, value: "session=new"))
            client.handler(self, wasRedirectedTo: next, redirectResponse: response)
            return
        }
        let body = Data("cookie=\(request.headerFields[.cookie] ?? "")".utf8)
        client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(body.count)))
        try await client.handler(self, deliver: body)
    }
}

@Suite("Cookies on a redirect a handler proposes")
struct ProposedRedirectTests {
    private func session(_ jar: CookieJar) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [LoginHandler.self]
        configuration.cookieStore = jar
        return LoaderSession(configuration: configuration)
    }

    @Test("The proposed request's copy of the jar's Cookie field is replaced by the jar's field for the new URL")
    func jarFillsTheHop() async throws {
        let jar = CookieJar()
        jar.save(setCookie: ["session=old", "theme=dark"], from: URL(string: "http://app.test/")!)
        let (body, _) = try await session(jar).data(from: URL(string: "http://app.test/login")!)
        // Stale, the hop would carry `session=old; theme=dark`: what the jar held before the 302 set the new one.
        #expect(String(decoding: body, as: UTF8.self) == "cookie=session=new; theme=dark")
    }

    @Test("A request with its own Cookie field keeps it on the proposed hop")
    func ownFieldKept() async throws {
        let jar = CookieJar()
        jar.save(setCookie: ["theme=dark"], from: URL(string: "http://app.test/")!)
        var request = LoadRequest(url: URL(string: "http://app.test/login")!)
        request.headerFields[.cookie] = "mine=1"
        let (body, _) = try await session(jar).data(for: request)
        #expect(String(decoding: body, as: UTF8.self) == "cookie=mine=1")
    }
}
