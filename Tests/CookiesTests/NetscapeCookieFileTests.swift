@testable import Cookies
import Foundation
import Testing

@Suite("NetscapeCookieFile: curl's cookie file format, read and written")
struct NetscapeCookieFileTests {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("Each field is read: leading-dot domains, the subdomain flag, HttpOnly lines, session expiry, CRLF, six fields")
    func reads() {
        let text = "# Netscape HTTP Cookie File\r\n\r\n.Example.COM\tTRUE\t/docs\tTRUE\t1900000000\ta\t1=2\r\n"
            + "#HttpOnly_www.example.com\tFALSE\t/\tfalse\t0\tb\t\n" + "www.example.com\tFALSE\t/\tFALSE\t0\tc\n"
        let cookies = NetscapeCookieFile.cookies(in: text, now: now)
        #expect(cookies.map(\.name) == ["a", "b", "c"])
        let a = cookies[0]
        #expect(a.domain == "example.com" && !a.isHostOnly && a.path == "/docs" && a.isSecure && !a.isHTTPOnly)
        #expect(a.value == "1=2" && a.expires == Date(timeIntervalSince1970: 1_900_000_000))
        #expect(cookies[1].isHTTPOnly && cookies[1].isHostOnly && cookies[1].expires == nil && cookies[1].value == "" && !cookies[1].isSecure)
        #expect(cookies[2].value == "")
        // Blanks before a line are skipped, as curl skips them.
        #expect(NetscapeCookieFile.cookies(in: "  \twww.example.com\tFALSE\t/\tFALSE\t0\td\t4\n", now: now).map(\.value) == ["4"])
    }

    @Test("Comments, short lines, bad expiries, empty names and expired cookies are skipped")
    func skips() {
        let text = "# comment\texample.com\tFALSE\t/\tFALSE\t0\tx\ty\nexample.com\tFALSE\t/\tFALSE\t0\n"
            + "example.com\tFALSE\t/\tFALSE\tsoon\tx\ty\nexample.com\tFALSE\t/\tFALSE\t-1\tx\ty\n"
            + "example.com\tFALSE\t/\tFALSE\t0\t\ty\nexample.com\tFALSE\t/\tFALSE\t1700000000\told\ty\n"
            + "example.com\tFALSE\t/\tFALSE\t0\tx\ty\textra\n"
        #expect(NetscapeCookieFile.cookies(in: text, now: now).isEmpty)
    }

    @Test("What is written reads back the same; a field with a tab or line break is left out")
    func roundTrip() {
        let cookies = [
            Cookie(name: "a", value: "1", domain: "example.com", isHostOnly: false, path: "/x", expires: Date(timeIntervalSince1970: 1_900_000_000),
                   isSecure: true, isHTTPOnly: true, created: now),
            Cookie(name: "b", value: "", domain: "www.example.com", created: now),
            Cookie(name: "c", value: "tab\there", domain: "example.com", created: now),
        ]
        let text = NetscapeCookieFile.text(for: cookies)
        #expect(text.contains("#HttpOnly_.example.com\tTRUE\t/x\tTRUE\t1900000000\ta\t1\n"))
        #expect(text.contains("www.example.com\tFALSE\t/\tFALSE\t0\tb\t\n"))
        #expect(NetscapeCookieFile.cookies(in: text, now: now) == Array(cookies.prefix(2)))
    }

    @Test("A jar takes inserted cookies as they are, by its limits, and an expired one removes its namesake")
    func insert() {
        let jar = CookieJar()
        jar.insert(Cookie(name: "a", value: "1", domain: "example.com", isSecure: true))
        jar.insert(Cookie(name: "big", value: String(repeating: "x", count: 5_000), domain: "example.com"))
        #expect(jar.cookieField(for: URL(string: "https://example.com/")!) == "a=1")
        jar.insert(Cookie(name: "a", value: "", domain: "example.com", expires: Date(timeIntervalSince1970: 0)))
        #expect(jar.cookies.isEmpty)
    }
}
