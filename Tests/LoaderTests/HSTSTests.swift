import Foundation
import Testing
@testable import Loader

@Suite("HTTP Strict Transport Security: the field's policy (RFC 6797 §6.1) and the hosts it covers (§8.2)")
struct HSTSTests {
    @Test("max-age (quoted or not, in any case) and includeSubDomains are read; a value that repeats a directive, lacks max-age or gives it no number states no policy")
    func header() {
        #expect(HSTSHeader("max-age=31536000") == HSTSHeader(maxAge: 31_536_000, includesSubdomains: false))
        #expect(HSTSHeader("Max-Age=\"15768000\" ; includeSubDomains") == HSTSHeader(maxAge: 15_768_000, includesSubdomains: true))
        #expect(HSTSHeader("includesubdomains; max-age=60; preload; x=\"y\"") == HSTSHeader(maxAge: 60, includesSubdomains: true),
                "unknown directives are ignored")
        #expect(HSTSHeader("max-age=0") == HSTSHeader(maxAge: 0, includesSubdomains: false))
        #expect(HSTSHeader("max-age=60; ext=\"a;max-age=5\"") == HSTSHeader(maxAge: 60, includesSubdomains: false),
                "a ; inside a quoted value ends no directive")
        #expect(HSTSHeader("ext=\"a\\\";max-age=5\"; max-age=7") == HSTSHeader(maxAge: 7, includesSubdomains: false),
                "nor after an escaped quote")
        #expect(HSTSHeader("max-age=99999999999999999999999")?.maxAge == .max, "a number past Int is for ever")
        for invalid in ["", "includeSubDomains", "max-age", "max-age=", "max-age=-1", "max-age=1.5", "max-age=abc",
                        "max-age=1; max-age=2", "max-age=1; includeSubDomains; includesubdomains"] {
            #expect(HSTSHeader(invalid) == nil, "\(invalid)")
        }
    }

    @Test("A policy covers its host, and the hosts beneath it only with includeSubDomains; it ends at max-age or with max-age=0; IP addresses and plain names are told apart")
    func store() {
        let store = HSTSStore()
        let now = Date()
        #expect(!store.requiresHTTPS("example.test"))
        store.record("max-age=100", for: "Example.Test.", at: now)
        #expect(store.requiresHTTPS("example.test", at: now) && store.requiresHTTPS("EXAMPLE.test.", at: now))
        #expect(!store.requiresHTTPS("www.example.test", at: now), "no includeSubDomains")
        #expect(!store.requiresHTTPS("example.test", at: now.addingTimeInterval(101)), "expired")
        #expect(store.entries.isEmpty, "the expired policy is gone")

        store.record("max-age=100; includeSubDomains", for: "example.test", at: now)
        #expect(store.requiresHTTPS("a.b.example.test", at: now) && !store.requiresHTTPS("badexample.test", at: now))
        #expect(!store.requiresHTTPS("test", at: now), "a policy covers no domain above its host")
        store.record("max-age=0", for: "example.test", at: now)
        #expect(!store.requiresHTTPS("example.test", at: now), "max-age=0 ends it")
        store.record("max-age=bad", for: "example.test", at: now)
        #expect(!store.requiresHTTPS("example.test", at: now), "a value with no policy changes nothing")

        store.record("max-age=100", for: "127.0.0.1", at: now)
        store.record("max-age=100", for: "[::1]", at: now)
        #expect(store.entries.isEmpty, "no policy for an IP address")
        #expect(!store.requiresHTTPS("127.0.0.1") && !store.requiresHTTPS("::1"))

        let kept = HSTSStore(entries: [.init(host: "Kept.Test", includesSubdomains: true, expires: nil),
                                       .init(host: "old.test", includesSubdomains: false, expires: now.addingTimeInterval(-1))])
        #expect(kept.entries == [.init(host: "kept.test", includesSubdomains: true, expires: nil)], "the expired entry is left out")
        #expect(kept.requiresHTTPS("www.kept.test"))
    }

    @Test("An http URL of a covered host goes as https, ws as wss, port 80 as 443 and any other port kept; others as they are")
    func upgrade() throws {
        let store = HSTSStore(entries: [.init(host: "example.test", includesSubdomains: false, expires: nil)])
        func secure(_ text: String) -> String? { store.secureURL(for: URL(string: text)!)?.absoluteString }
        #expect(secure("http://example.test/a?b#c") == "https://example.test/a?b#c")
        #expect(secure("HTTP://Example.Test:80/") == "https://Example.Test:443/")
        #expect(secure("http://user@example.test:8080/") == "https://user@example.test:8080/")
        #expect(secure("ws://example.test/socket") == "wss://example.test/socket")
        #expect(secure("https://example.test/") == nil && secure("ftp://example.test/") == nil && secure("http://other.test/") == nil)
        let relative = URL(string: "/p?q", relativeTo: URL(string: "http://example.test/base/")!)!
        #expect(store.secureURL(for: relative)?.absoluteString == "https://example.test/p?q", "resolved against its base first")
    }
}
