import Foundation
@testable import Loader
import Testing

@Suite("URL(leniently:): what people type and servers send, its escapes kept")
struct LenientURLTests {
    @Test("Bytes a URL may not hold are encoded, escapes already there are not", arguments: [
        ("http://h/p?a=x|y&b=%41", "http://h/p?a=x%7Cy&b=%41"),
        ("http://h/a%2fb c", "http://h/a%2fb%20c"),
        ("http://h/100%", "http://h/100%25"),
        ("http://h/a%zz", "http://h/a%25zz"),
        ("http://h/caf\u{E9}?q=%41", "http://h/caf%C3%A9?q=%41"),
        ("http://h/a{b}^`\"<>\\", "http://h/a%7Bb%7D%5E%60%22%3C%3E%5C"),
        ("http://h/p[1]", "http://h/p%5B1%5D"),
        ("http://h/a#b#c", "http://h/a#b%23c"),
        ("http://[::1]:80/a|b", "http://[::1]:80/a%7Cb"),
        ("http://user:pw@h:8/x", "http://user:pw@h:8/x"),
        ("data:,a b%41", "data:,a%20b%41"),
        ("http://u:p%40ss^@h/x|y", "http://u:p%40ss%5E@h/x%7Cy"),
        ("http://a@b:c@h/", "http://a%40b:c@h/"),
        ("http://h/a@b|c", "http://h/a@b%7Cc"),
    ])
    func encodes(_ text: String, _ expected: String) {
        #expect(URL(leniently: text)?.absoluteString == expected)
    }

    @Test("A valid URL goes through as written")
    func validUnchanged() {
        let text = "https://example.com:8443/a/b%20c;p?q=1&r=%7E#frag"
        #expect(URL(leniently: text)?.absoluteString == text)
        #expect(URL.encodingInvalidBytes(of: text) == text)
    }

    @Test("A reference is resolved against its base after encoding")
    func relative() throws {
        let base = try #require(URL(string: "http://h/dir/page"))
        #expect(URL(leniently: "next|1?x=%41", relativeTo: base)?.absoluteString == "http://h/dir/next%7C1?x=%41")
        #expect(URL(leniently: "//other/x y", relativeTo: base)?.absoluteString == "http://other/x%20y")
        #expect(URL(leniently: "?q=a|b%41", relativeTo: base)?.absoluteString == "http://h/dir/page?q=a%7Cb%41")
        #expect(URL(leniently: "#x#y", relativeTo: base)?.absoluteString == "http://h/dir/page#x%23y")
    }
}
