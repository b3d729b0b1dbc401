@testable import Cookies
import Foundation
import Testing

@Suite("Set-Cookie fields and cookie dates, parsed as RFC 6265 §5.1.1 and §5.2 say")
struct SetCookieTests {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("Name, value and every attribute; names of attributes in any case; the last of each kind wins")
    func attributes() throws {
        let cookie = try #require(SetCookie(" id = a b ; path=/docs; DOMAIN=.Example.COM; secure; HttpOnly; SameSite=Lax; Path=/app", now: now))
        #expect(cookie.name == "id")
        #expect(cookie.value == "a b")
        #expect(cookie.path == "/app")
        #expect(cookie.domain == "example.com")
        #expect(cookie.isSecure && cookie.isHTTPOnly)
        #expect(cookie.sameSite == "Lax")
        #expect(cookie.expires == nil, "a session cookie")
    }

    @Test("No '=' or an empty name is no cookie; an empty value is one; a path not starting with '/' is the default")
    func malformed() {
        #expect(SetCookie("novalue", now: now) == nil)
        #expect(SetCookie("=value", now: now) == nil)
        #expect(SetCookie("empty=", now: now)?.value == "")
        #expect(SetCookie("a=b; Path=docs", now: now)?.path == nil)
        #expect(SetCookie("a=b; Domain=", now: now)?.domain == nil)
        #expect(SetCookie("a=b=c", now: now)?.value == "b=c")
    }

    @Test("Max-Age wins over Expires in either order; zero or less has expired; lifetimes stop at 400 days")
    func lifetimes() throws {
        let expires = "Expires=Wed, 09 Jun 2021 10:18:14 GMT"
        #expect(SetCookie("a=b; Max-Age=60; \(expires)", now: now)?.expires == now.addingTimeInterval(60))
        #expect(SetCookie("a=b; \(expires); Max-Age=60", now: now)?.expires == now.addingTimeInterval(60))
        #expect(try #require(SetCookie("a=b; Max-Age=0", now: now)?.expires) < now)
        #expect(try #require(SetCookie("a=b; Max-Age=-5", now: now)?.expires) < now)
        #expect(SetCookie("a=b; Max-Age=1e3", now: now)?.expires == nil, "not a number: ignored")
        #expect(SetCookie("a=b; Max-Age=99999999999999999999999", now: now)?.expires == now.addingTimeInterval(400 * 86_400))
        #expect(SetCookie("a=b; Expires=Fri, 01 Jan 2100 00:00:00 GMT", now: now)?.expires == now.addingTimeInterval(400 * 86_400))
        #expect(SetCookie("a=b; \(expires)", now: now)?.expires == Date(timeIntervalSince1970: 1_623_233_894))
    }

    @Test("Dates in the forms servers send: RFC 1123, RFC 850, asctime, and looser ones; impossible ones fail")
    func dates() {
        let june9 = Date(timeIntervalSince1970: 1_623_233_894)
        #expect(CookieDate.parse("Wed, 09 Jun 2021 10:18:14 GMT") == june9)
        #expect(CookieDate.parse("Wednesday, 09-Jun-21 10:18:14 GMT") == june9)
        #expect(CookieDate.parse("Wed Jun  9 10:18:14 2021") == june9)
        #expect(CookieDate.parse("9 june 2021 10:18:14") == june9)
        #expect(CookieDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
        #expect(CookieDate.parse("Sat, 29 Feb 2020 12:00:00 GMT") == Date(timeIntervalSince1970: 1_582_977_600))
        #expect(CookieDate.parse("Mon, 01 Jan 69 00:00:00 GMT") == Date(timeIntervalSince1970: 3_124_224_000), "69 is 2069")
        #expect(CookieDate.parse("Fri, 29 Feb 2019 12:00:00 GMT") == nil, "no 29 February in 2019")
        #expect(CookieDate.parse("Wed, 09 Jun 2021 24:00:00 GMT") == nil)
        #expect(CookieDate.parse("Wed, 09 Jun 1600 10:18:14 GMT") == nil)
        #expect(CookieDate.parse("Wed, 09 2021 10:18:14 GMT") == nil, "no month")
        #expect(CookieDate.parse("tomorrow") == nil)
        #expect(CookieDate.parse("") == nil)
    }
}
