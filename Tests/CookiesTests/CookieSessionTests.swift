import Cookies
import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

@Suite("Cookies through a session, against a real nginx")
struct CookieSessionTests {
    private func session(store: (any CookieStore)?) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.cookieStore = store
        return LoaderSession(configuration: configuration)
    }

    private func text(_ session: LoaderSession, _ url: URL) async throws -> String {
        String(decoding: try await session.data(from: url).0, as: UTF8.self)
    }

    @Test("A login's 302 sets cookies that its redirect already carries; later requests carry them; Max-Age=0 removes one")
    func loginFlow() async throws {
        let nginx = try #require(TestServers.nginx, "nginx could not be started by scripts/test-servers")
        let base = "http://127.0.0.1:\(nginx.httpPort)"
        let jar = CookieJar()
        let session = session(store: jar)
        // The redirect is followed above the cookie layer: the request to /cookies/show is one of its own.
        #expect(try await text(session, URL(string: "\(base)/cookies/login")!) == "cookie=theme=dark; session=s3cr3t\n")
        #expect(Set(jar.cookies.map(\.name)) == ["session", "theme"])
        #expect(jar.cookies.first { $0.name == "session" }?.isHTTPOnly == true)
        #expect(try await text(session, URL(string: "\(base)/cookies/logout")!) == "bye\n")
        #expect(try await text(session, URL(string: "\(base)/cookies/show")!) == "cookie=theme=dark\n")
        // A request with its own Cookie field is sent with it alone.
        var own = LoadRequest(url: URL(string: "\(base)/cookies/show")!)
        own.headerFields[.cookie] = "mine=1"
        #expect(String(decoding: try await session.data(for: own).0, as: UTF8.self) == "cookie=mine=1\n")
    }

    @Test("Without a cookie store nothing is kept or sent; two sessions given one jar share its cookies")
    func stores() async throws {
        let nginx = try #require(TestServers.nginx, "nginx could not be started by scripts/test-servers")
        let base = "http://127.0.0.1:\(nginx.httpPort)"
        #expect(try await text(session(store: nil), URL(string: "\(base)/cookies/login")!) == "cookie=\n")
        let jar = CookieJar()
        _ = try await text(session(store: jar), URL(string: "\(base)/cookies/login")!)
        #expect(try await text(session(store: jar), URL(string: "\(base)/cookies/show")!) == "cookie=theme=dark; session=s3cr3t\n")
    }
}
