@testable import Cookies
import Foundation
import Loader
import Testing

@Suite("CookieJar: RFC 6265's storage model and Cookie field, with the Public Suffix List")
struct CookieJarTests {
    /// A jar on a clock the test moves.
    private final class Clock: Sendable {
        let now = Locked(Date(timeIntervalSince1970: 1_800_000_000))
        func advance(_ seconds: TimeInterval) { now.withLock { $0 += seconds } }
    }

    private func jar(_ clock: Clock = Clock()) -> CookieJar {
        CookieJar(publicSuffixes: .shipped, clock: { clock.now.withLock { $0 } })
    }

    private func url(_ text: String) -> URL { URL(string: text)! }

    @Test("A cookie without Domain goes back to its host alone; with one, to the domain's hosts too")
    func domains() {
        let jar = jar()
        jar.save(setCookie: ["host=1", "wide=2; Domain=example.com"], from: url("https://www.example.com/"))
        #expect(jar.cookieField(for: url("https://www.example.com/")) == "host=1; wide=2")
        #expect(jar.cookieField(for: url("https://example.com/")) == "wide=2")
        #expect(jar.cookieField(for: url("https://a.b.example.com/x")) == "wide=2")
        #expect(jar.cookieField(for: url("https://badexample.com/")) == nil)
        #expect(jar.cookieField(for: url("https://other.org/")) == nil)
        #expect(jar.cookies.first { $0.name == "host" }?.isHostOnly == true)
    }

    @Test("A Domain written in Unicode is matched in its ASCII form, as the host arrives")
    func unicodeDomain() {
        let jar = jar()
        let host = url("https://www.bücher.example/")
        #expect(host.host == "www.xn--bcher-kva.example", "the URL gives the host in its ASCII form")
        jar.save(setCookie: ["sid=1; Domain=BÜCHER.example", "ascii=2; Domain=xn--bcher-kva.example"], from: host)
        #expect(jar.cookieField(for: url("https://www.xn--bcher-kva.example/")) == "sid=1; ascii=2")
        #expect(jar.cookieField(for: url("https://shop.bücher.example/")) == "sid=1; ascii=2")
        #expect(jar.cookieField(for: url("https://www.other.example/")) == nil)
    }

    @Test("A Domain that is a public suffix, or that does not cover the host, is refused")
    func refusedDomains() {
        let jar = jar()
        jar.save(setCookie: ["a=1; Domain=com", "b=2; Domain=co.uk", "c=3; Domain=other.com", "d=4; Domain=www.example.co.uk.evil"],
                 from: url("http://www.example.co.uk/"))
        jar.save(setCookie: ["e=5; Domain=github.io"], from: url("http://site.github.io/"))
        #expect(jar.cookies.isEmpty, "\(jar.cookies)")
        // A host that is itself a public suffix may set a cookie for itself alone.
        jar.save(setCookie: ["f=6; Domain=localhost"], from: url("http://localhost:8080/"))
        #expect(jar.cookies.map(\.name) == ["f"])
        #expect(jar.cookies.first?.isHostOnly == true)
    }

    @Test("Paths: the default is the request's folder; a cookie goes to its path and the paths beneath, longest first")
    func paths() {
        let jar = jar()
        jar.save(setCookie: ["root=1; Path=/", "deep=2; Path=/docs/api"], from: url("http://example.com/x"))
        jar.save(setCookie: ["implied=3"], from: url("http://example.com/docs/page.html"))
        #expect(jar.cookies.first { $0.name == "implied" }?.path == "/docs")
        #expect(jar.cookieField(for: url("http://example.com/docs/api/v1")) == "deep=2; implied=3; root=1")
        #expect(jar.cookieField(for: url("http://example.com/docs")) == "implied=3; root=1")
        #expect(jar.cookieField(for: url("http://example.com/docsx")) == "root=1", "/docs does not cover /docsx")
    }

    @Test("Secure cookies: set over https only, sent over https only, never replaced from plain http")
    func secure() {
        let jar = jar()
        jar.save(setCookie: ["planted=1; Secure"], from: url("http://example.com/"))
        #expect(jar.cookies.isEmpty)
        jar.save(setCookie: ["token=1; Secure"], from: url("https://example.com/"))
        #expect(jar.cookieField(for: url("http://example.com/")) == nil)
        #expect(jar.cookieField(for: url("wss://example.com/socket")) == "token=1")
        jar.save(setCookie: ["token=forged"], from: url("http://example.com/"))
        #expect(jar.cookieField(for: url("https://example.com/")) == "token=1")
        // The secure site itself may remove it without repeating `Secure`, as a logout does.
        jar.save(setCookie: ["token=; Max-Age=0"], from: url("https://example.com/"))
        #expect(jar.cookies.isEmpty)
    }

    @Test("Plain http to this machine (localhost, 127.0.0.0/8, ::1) is a secure origin, as curl's jar takes it")
    func loopbackIsSecure() {
        for origin in ["http://localhost:3000", "http://127.0.0.2:8080", "http://[::1]:8080", "http://[0:0:0:0:0:0:0:1]", "ws://LocalHost"] {
            let jar = jar()
            jar.save(setCookie: ["sid=1; Secure; HttpOnly", "__Host-id=2; Secure; Path=/"], from: url(origin + "/login"))
            #expect(jar.cookieField(for: url(origin + "/")) == "sid=1; __Host-id=2", "\(origin)")
        }
        // Only this machine: a name that merely starts like one, or another address, is plain http.
        for origin in ["http://localhost.example.com", "http://127.0.0.1.example.com", "http://10.0.0.1", "http://[::2]",
                       "http://app.localhost"] {
            let jar = jar()
            jar.save(setCookie: ["sid=1; Secure"], from: url(origin + "/"))
            #expect(jar.cookies.isEmpty, "\(origin)")
        }
        // Addresses as the connection reads them: a name that looks like one is a name, looked up elsewhere.
        #expect(!CookieJar.isLoopback("127.+0.0.1") && !CookieJar.isLoopback("127.1") && CookieJar.isLoopback("127.255.0.9"))
    }

    @Test("A cookie inserted with a domain as HTTPCookie or a cookie file writes it (`.Example.COM`) is a domain cookie, lowercased")
    func insertedDomainNormalised() {
        let jar = jar()
        jar.insert(Cookie(name: "a", value: "1", domain: ".Example.com"))
        jar.insert(Cookie(name: "b", value: "2", domain: "Shop.Example.com."))
        #expect(jar.cookies.map(\.domain) == ["example.com", "shop.example.com"])
        #expect(jar.cookieField(for: url("https://www.example.com/")) == "a=1")
        #expect(jar.cookieField(for: url("https://shop.example.com/")) == "a=1; b=2")
    }

    @Test("Plain http cannot shadow a Secure cookie with one of its name on a covering domain or a deeper path")
    func secureNotShadowed() {
        let jar = jar()
        jar.save(setCookie: ["token=1; Secure; Domain=example.com; Path=/app"], from: url("https://www.example.com/"))
        jar.save(setCookie: ["token=forged; Path=/app/admin", "token=forged; Domain=www.example.com; Path=/app/x", "other=1"],
                 from: url("http://www.example.com/app/"))
        #expect(jar.cookies.map(\.name) == ["token", "other"], "\(jar.cookies)")
        // Over https the site may set one beside it; a path outside the Secure one's, or wider, is no shadow.
        jar.save(setCookie: ["token=2; Path=/app/admin"], from: url("https://www.example.com/"))
        jar.save(setCookie: ["token=3; Path=/blog", "token=root; Path=/"], from: url("http://www.example.com/"))
        #expect(jar.cookieField(for: url("https://www.example.com/app/admin")) == "token=2; token=1; other=1; token=root")
        #expect(jar.cookieField(for: url("http://www.example.com/blog")) == "token=3; token=root")
    }

    @Test("__Secure- needs Secure; __Host- needs Secure, no Domain and Path=/; either prefix in any case")
    func namePrefixes() {
        let jar = jar()
        let site = url("https://www.example.com/a/b")
        jar.save(setCookie: ["__Secure-plain=1", "__secure-lower=1", "__Host-domain=1; Secure; Domain=example.com; Path=/",
                             "__Host-nopath=1; Secure", "__Host-deep=1; Secure; Path=/a", "__HOST-plain=1; Path=/"], from: site)
        #expect(jar.cookies.isEmpty, "\(jar.cookies)")
        jar.save(setCookie: ["__Secure-id=1; Secure; Domain=example.com", "__Host-id=2; Secure; Path=/", "__host-x=3; Secure; Path=/"], from: site)
        #expect(jar.cookies.map(\.name) == ["__Secure-id", "__Host-id", "__host-x"])
        #expect(jar.cookies.first { $0.name == "__Host-id" }?.isHostOnly == true)
        // Over plain http neither can be set, Secure or not.
        jar.removeAll()
        jar.save(setCookie: ["__Secure-id=1; Secure", "__Host-id=2; Path=/"], from: url("http://www.example.com/"))
        #expect(jar.cookies.isEmpty)
    }

    @Test("A cookie set again is replaced and keeps its place; Max-Age=0 removes it; expired cookies are not sent")
    func lifetimes() {
        let clock = Clock()
        let jar = jar(clock)
        let site = url("http://example.com/")
        jar.save(setCookie: ["a=1", "b=2; Max-Age=60"], from: site)
        clock.advance(1)
        jar.save(setCookie: ["a=changed"], from: site)
        #expect(jar.cookieField(for: site) == "a=changed; b=2", "the replaced cookie keeps its creation time and place")
        clock.advance(60)
        #expect(jar.cookieField(for: site) == "a=changed")
        jar.save(setCookie: ["a=x; Max-Age=0"], from: site)
        #expect(jar.cookieField(for: site) == nil)
        #expect(jar.cookies.isEmpty)
    }

    @Test("Only http(s) and ws(s) take part; a cookie too large, and one with no name, are refused")
    func limits() {
        let jar = jar()
        jar.save(setCookie: ["a=1"], from: url("ftp://example.com/"))
        jar.save(setCookie: ["big=" + String(repeating: "x", count: 5_000), "=nameless"], from: url("http://example.com/"))
        #expect(jar.cookies.isEmpty)
        jar.save(setCookie: ["a=1"], from: url("http://example.com/"))
        #expect(jar.cookieField(for: url("ftp://example.com/")) == nil)
        #expect(jar.cookieField(for: url("data:,x")) == nil)
    }

    @Test("A site keeps at most 180 cookies, the earliest created going first")
    func perSiteLimit() {
        let jar = jar()
        for index in 0..<200 {
            jar.save(setCookie: ["c\(index)=\(index)"], from: url("http://www.example.com/"))
        }
        jar.save(setCookie: ["other=1"], from: url("http://other.example.org/"))
        let names = jar.cookies.map(\.name)
        #expect(names.count == 181)
        #expect(names.first == "c20")
        #expect(names.contains("c199") && names.contains("other"))
    }

    @Test("Over a site's limit its plain cookies go before its Secure ones")
    func perSiteLimitKeepsSecure() {
        let jar = jar()
        jar.save(setCookie: ["s0=0; Secure", "s1=1; Secure"], from: url("https://www.example.com/"))
        for index in 0..<190 {
            jar.save(setCookie: ["c\(index)=\(index)"], from: url("http://www.example.com/"))
        }
        let names = jar.cookies.map(\.name)
        #expect(names.count == 180)
        #expect(Array(names.prefix(3)) == ["s0", "s1", "c12"], "\(names.prefix(5))")
    }

    @Test("Saved and read from many tasks at once, the jar loses nothing")
    func concurrentUse() async {
        let jar = jar()
        await withTaskGroup(of: Void.self) { group in
            for site in 0..<8 {
                group.addTask {
                    for index in 0..<100 {
                        jar.save(setCookie: ["c\(index)=\(site)"], from: URL(string: "http://site\(site).example/")!)
                        _ = jar.cookieField(for: URL(string: "http://site\((site + 1) % 8).example/")!)
                    }
                }
            }
        }
        #expect(jar.cookies.count == 800)
        for site in 0..<8 {
            #expect(jar.cookies(for: URL(string: "http://site\(site).example/")!).count == 100)
        }
    }
}
