import Foundation
import HTTPTypes
@testable import Loader
import Testing

/// RFC 9111's rules as plain values: no server, the clock given.
@Suite("HTTP cache rules")
struct CacheRulesTests {
    let url = URL(string: "http://example.test/page")!
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    private func entry(_ fields: HTTPFields, status: HTTPResponse.Status = .ok, url: URL? = nil,
                       requestedAt: Date? = nil, storedAt: Date? = nil) -> CachedResponse {
        CachedResponse(response: LoadResponse(url: url ?? self.url, status: status, headerFields: fields), data: Data("body".utf8),
                       requestedAt: requestedAt ?? t0, storedAt: storedAt ?? t0)
    }

    private func date(_ offset: TimeInterval) -> String {
        IMFFixdate.string(fromUnixTime: Int(t0.timeIntervalSince1970 + offset))!
    }

    @Test("HTTP dates in the three forms RFC 9110 accepts, and not otherwise")
    func httpDates() {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.parse(date(0)) == t0)
        for bad in ["0", "-1", "", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                    "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 8:49:37 GMT"] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("Cache-Control: directives in any case, across fields, quoted values with commas, bad numbers as 0")
    func cacheControl() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .cacheControl, value: "Max-Age=60, private=\"a, b\", must-revalidate"))
        fields.append(HTTPField(name: .cacheControl, value: "max-stale, min-fresh=x"))
        let control = CacheControl(fields)
        #expect(control.maxAge == 60)
        #expect(control.mustRevalidate)
        #expect(control.maxStale == Int.max)
        #expect(control.minFresh == 0)
        #expect(!control.noStore && !control.noCache)
        #expect(CacheControl([.cacheControl: "max-age=99999999999999"]).maxAge == 1 << 31)
        #expect(CacheControl([HTTPField.Name("Pragma")!: "no-cache"]).noCache)
        #expect(!CacheControl([HTTPField.Name("Pragma")!: "no-cache", .cacheControl: "max-age=5"]).noCache,
                "Pragma counts only without Cache-Control")
    }

    @Test("Freshness lifetime: max-age over Expires, Expires less Date, an invalid Expires is 0, the heuristic's tenth")
    func lifetime() {
        #expect(CacheRules.freshnessLifetime(of: entry([.cacheControl: "max-age=60", .expires: date(3600), .date: date(0)])) == 60)
        #expect(CacheRules.freshnessLifetime(of: entry([.expires: date(3600), .date: date(0)])) == 3600)
        #expect(CacheRules.freshnessLifetime(of: entry([.expires: "0", .date: date(0)])) == 0)
        #expect(CacheRules.freshnessLifetime(of: entry([.lastModified: date(-100_000), .date: date(0)])) == 10_000)
        #expect(CacheRules.freshnessLifetime(of: entry([.lastModified: date(-100_000_000), .date: date(0)])) == 7 * 24 * 3600,
                "the heuristic is capped")
        #expect(CacheRules.freshnessLifetime(of: entry([.lastModified: date(-100_000)], url: URL(string: "http://example.test/?q=1")!)) == 0,
                "no heuristic for a URL with a query")
        #expect(CacheRules.freshnessLifetime(of: entry([.lastModified: date(-100_000)], status: .found)) == 0,
                "no heuristic for a status that does not allow it")
    }

    @Test("Current age: the larger of Date's and Age's account, plus the round trip and the time stored")
    func age() {
        // Sent at t0, arrived 2 s later with Age: 10 and a Date 1 s after t0; asked 100 s after it arrived.
        let stored = entry([.age: "10", .date: date(1)], requestedAt: t0, storedAt: t0.addingTimeInterval(2))
        #expect(CacheRules.currentAge(of: stored, now: t0.addingTimeInterval(102)) == 112)
        // A Date in the past (a server clock behind) counts when it says more.
        let behind = entry([.date: date(-500)], storedAt: t0)
        #expect(CacheRules.currentAge(of: behind, now: t0) == 500)
    }

    @Test("Age: delta-seconds only (a list's first member), past 2^31 read as 2^31; a served head's Age is whole seconds")
    func hostileAge() {
        let cap = TimeInterval(1 << 31)
        for (value, expected) in [("inf", 0.0), ("1e3", 0), ("-5", 0), ("nan", 0), ("99999999999999999999", cap), ("7, 9", 7)] {
            let stored = entry([.age: value], storedAt: t0)
            #expect(CacheRules.currentAge(of: stored, now: t0) == expected, "Age: \(value)")
            // Before, an Age of inf or of twenty digits trapped here, in the Double-to-Int conversion.
            let served = CacheRules.servedHead(of: stored, for: url, now: t0.addingTimeInterval(10))
            #expect(served.headerFields[.age] == String(Int(min(expected + 10, cap))), "Age: \(value)")
        }
    }

    @Test("A directive given twice counts once, the first (RFC 9111 §4.2.1): an appended max-age does not extend freshness")
    func repeatedDirective() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .cacheControl, value: "max-age=0"))
        fields.append(HTTPField(name: .cacheControl, value: "max-age=86400, s-maxage=5, s-maxage=50"))
        let control = CacheControl(fields)
        #expect(control.maxAge == 0)
        #expect(control.sharedMaxAge == 5)
        #expect(CacheRules.freshnessLifetime(of: entry(fields)) == 0)
    }

    @Test("A 304 updates the stored response only if its validators select it: strong ETags strongly, weak ones weakly, else Last-Modified")
    func validatorsSelect() {
        func matches(_ notModified: HTTPFields, _ stored: HTTPFields) -> Bool { CacheRules.validatorsMatch(notModified, stored) }
        #expect(matches([.eTag: "\"a\""], [.eTag: "\"a\""]))
        #expect(!matches([.eTag: "\"b\""], [.eTag: "\"a\""]))
        #expect(matches([.eTag: "W/\"a\""], [.eTag: "W/\"a\""]))
        #expect(matches([.eTag: "W/\"a\""], [.eTag: "\"a\""]), "weak comparison takes a strong stored tag")
        #expect(!matches([.eTag: "\"a\""], [.eTag: "W/\"a\""]), "a strong tag selects only a strong one")
        #expect(!matches([.eTag: "W/\"b\""], [.eTag: "W/\"a\""]))
        #expect(!matches([.eTag: "\"a\""], [.lastModified: date(0)]), "a tag the stored response does not have")
        #expect(matches([.lastModified: date(0)], [.lastModified: "Sunday, " + date(0).dropFirst(5)]) == (HTTPDate.parse("Sunday, " + date(0).dropFirst(5)) == t0))
        #expect(matches([.lastModified: date(0)], [.lastModified: date(0), .eTag: "\"a\""]))
        #expect(!matches([.lastModified: date(5)], [.lastModified: date(0)]))
        #expect(matches([:], [.eTag: "\"a\""]), "a 304 without validators updates the one entry")
        let stored = entry([.eTag: "W/\"v1\"", .cacheControl: "max-age=1"])
        let later = t0.addingTimeInterval(500)
        let other = LoadResponse(url: url, status: .notModified, headerFields: [.eTag: "W/\"v2\""])
        #expect(CacheRules.refreshed(stored, by: other, requestedAt: later, receivedAt: later) == nil)
    }

    /// The decision's case, as a word, for comparing.
    private func decision(_ request: LoadRequest, _ entry: CachedResponse?, at offset: TimeInterval) -> String {
        decision(request, CacheControl(), entry, at: offset)
    }

    private func decision(_ request: LoadRequest, _ control: CacheControl, _ entry: CachedResponse?,
                          at offset: TimeInterval) -> String {
        switch CacheRules.decide(request, requestControl: control, entry: entry, now: t0.addingTimeInterval(offset)) {
        case .serve: "serve"
        case .validate: "validate"
        case .load: "load"
        case .gatewayTimeout: "504"
        }
    }

    @Test("Keys compare URLs as RFC 9110 does: scheme and host in any case, a default port, an empty path; never a fragment, user or password")
    func keys() {
        func key(_ text: String) -> String { CachedResponse.key(for: URL(string: text)!) }
        let plain = key("http://example.test/items/5?a=1")
        #expect(plain == "http://example.test/items/5?a=1")
        #expect(key("HTTP://Example.TEST:80/items/5?a=1") == plain)
        #expect(key("http://example.test/items/5?a=1#top") == plain)
        #expect(key("https://example.test") == key("https://example.test:443/"))
        #expect(key("http://example.test:8080/items/5?a=1") != plain)
        #expect(key("http://example.test/Items/5?a=1") != plain, "a path is compared as written")
        #expect(key("http://example.test/items/5?a=2") != plain)
        #expect(key("http://ann:secret@example.test/items/5?a=1") == plain)
    }

    @Test("Decisions: fresh is served, stale is validated, no validator means a plain load, must-revalidate beats max-stale")
    func decisions() throws {
        let request = LoadRequest(url: url)
        let fresh = entry([.cacheControl: "max-age=60", .date: date(0), .eTag: "\"v1\""])
        #expect(decision(request, fresh, at: 30) == "serve")
        #expect(decision(request, fresh, at: 61) == "validate")
        guard case .validate(let conditional, _) = CacheRules.decide(request, requestControl: CacheControl(), entry: fresh,
                                                                      now: t0.addingTimeInterval(61)) else { return }
        #expect(conditional.headerFields[.ifNoneMatch] == "\"v1\"")
        #expect(conditional.headerFields[.ifModifiedSince] == nil)
        let noValidator = entry([.cacheControl: "max-age=60", .date: date(0)])
        #expect(decision(request, noValidator, at: 61) == "load")
        var maxStale = CacheControl()
        maxStale.maxStale = 100
        #expect(decision(request, maxStale, noValidator, at: 120) == "serve", "max-stale=100 accepts an entry 60 s stale")
        #expect(decision(request, maxStale, noValidator, at: 200) == "load", "but not one 140 s stale")
        let mustRevalidate = entry([.cacheControl: "max-age=60, must-revalidate", .date: date(0)])
        #expect(decision(request, maxStale, mustRevalidate, at: 120) == "load", "must-revalidate forbids serving stale")
        let proxyRevalidate = entry([.cacheControl: "max-age=60, proxy-revalidate", .date: date(0)])
        #expect(decision(request, maxStale, proxyRevalidate, at: 120) == "serve", "proxy-revalidate binds shared caches alone")
        var minFresh = CacheControl()
        minFresh.minFresh = 50
        #expect(decision(request, minFresh, noValidator, at: 30) == "load", "min-fresh=50 refuses an entry fresh for 30 s more")
        var onlyIfCached = CacheControl()
        onlyIfCached.onlyIfCached = true
        #expect(decision(request, onlyIfCached, nil, at: 0) == "504")
        #expect(decision(request, onlyIfCached, noValidator, at: 61) == "504")
        let elseLoad = LoadRequest(url: url, cachePolicy: .returnCacheDataElseLoad)
        #expect(decision(elseLoad, noValidator, at: 1e6) == "serve", "returnCacheDataElseLoad serves an entry of any age")
        let reload = LoadRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData)
        #expect(decision(reload, fresh, at: 0) == "load")
        let noCache = entry([.cacheControl: "no-cache, max-age=600", .lastModified: date(-10)])
        #expect(decision(request, noCache, at: 1) == "validate")
    }

    @Test("Storable: GET only, no no-store, no credentials, Vary: * never, explicit freshness or a heuristic status")
    func storable() {
        let get = LoadRequest(url: url)
        let none = CacheControl()
        func response(_ fields: HTTPFields, _ status: HTTPResponse.Status = .ok) -> LoadResponse {
            LoadResponse(url: url, status: status, headerFields: fields)
        }
        #expect(CacheRules.storable(response([:]), for: get, requestControl: none) != nil)
        var post = get
        post.method = .post
        #expect(CacheRules.storable(response([.cacheControl: "max-age=60"]), for: post, requestControl: none) == nil)
        #expect(CacheRules.storable(response([.cacheControl: "max-age=60, no-store"]), for: get, requestControl: none) == nil)
        #expect(CacheRules.storable(response([:], .found), for: get, requestControl: none) == nil)
        #expect(CacheRules.storable(response([.cacheControl: "max-age=60"], .found), for: get, requestControl: none) != nil)
        #expect(CacheRules.storable(response([.cacheControl: "max-age=60"], .partialContent), for: get, requestControl: none) == nil)
        #expect(CacheRules.storable(response([.vary: "*"]), for: get, requestControl: none) == nil)
        var authorized = get
        authorized.headerFields[.authorization] = "Basic dTpw"
        #expect(CacheRules.storable(response([.cacheControl: "max-age=60"]), for: authorized, requestControl: none) == nil)
        #expect(CacheRules.storable(response([.cacheControl: "max-age=60, public"]), for: authorized, requestControl: none) == nil,
                "one user's answer, public or not")
        #expect(CacheRules.storable(response([:]), for: get, requestControl: none)?[.acceptEncoding] == "",
                "Accept-Encoding always counts, absent as empty")
        var withLanguage = get
        withLanguage.headerFields[.acceptLanguage] = "fr"
        let varying = CacheRules.storable(response([.vary: "Accept-Language, X-Absent"]), for: withLanguage, requestControl: none)
        #expect(varying?[.acceptLanguage] == "fr")
        #expect(varying?[HTTPField.Name("X-Absent")!] == "")
    }

    @Test("A private response to a request with cookies varies on them, named or not: another user's session sharing the store does not get it")
    func privateVariesOnCookies() throws {
        var alice = LoadRequest(url: url)
        alice.headerFields[.cookie] = "sessionid=alice"
        var bob = LoadRequest(url: url)
        bob.headerFields[.cookie] = "sessionid=bob"
        let none = CacheControl(HTTPFields())
        let account = LoadResponse(url: url, status: .ok, headerFields: [.cacheControl: "private, max-age=300"])
        let varying = try #require(CacheRules.storable(account, for: alice, requestControl: none))
        #expect(varying[.cookie] == "sessionid=alice")
        let stored = CachedResponse(response: account, data: Data("alice's account".utf8), varyingFields: varying)
        #expect(CacheRules.matches(stored, alice))
        #expect(!CacheRules.matches(stored, bob))
        #expect(!CacheRules.matches(stored, LoadRequest(url: url)))
        // A public answer is everyone's: the cookies do not count.
        let shared = LoadResponse(url: url, status: .ok, headerFields: [.cacheControl: "max-age=300"])
        #expect(CacheRules.storable(shared, for: alice, requestControl: none)?[.cookie] == nil)
    }

    @Test("A 304 replaces the stored fields it carries, keeps the body's own, and is refused for another ETag")
    func refreshed() throws {
        let stored = entry([.eTag: "\"v1\"", .contentLength: "4", .cacheControl: "max-age=1", .contentType: "text/plain"])
        let later = t0.addingTimeInterval(500)
        let notModified = LoadResponse(url: url, status: .notModified,
                                       headerFields: [.eTag: "\"v1\"", .cacheControl: "max-age=600", .contentLength: "0"])
        let updated = try #require(CacheRules.refreshed(stored, by: notModified, requestedAt: later, receivedAt: later))
        #expect(updated.response.headerFields[.cacheControl] == "max-age=600")
        #expect(updated.response.headerFields[.contentLength] == "4")
        #expect(updated.response.headerFields[.contentType] == "text/plain")
        #expect(updated.storedAt == later)
        #expect(updated.data == stored.data)
        let other = LoadResponse(url: url, status: .notModified, headerFields: [.eTag: "\"v2\""])
        #expect(CacheRules.refreshed(stored, by: other, requestedAt: later, receivedAt: later) == nil)
    }

    @Test("A 304 extends freshness: its Date (or the time it came, without one) and Cache-Control; the stored Age goes")
    func refreshExtendsFreshness() throws {
        let stored = entry([.cacheControl: "max-age=60", .date: date(0), .age: "30", .eTag: "\"v1\""])
        let request = LoadRequest(url: url)
        #expect(decision(request, stored, at: 100) == "validate")
        let at100 = t0.addingTimeInterval(100)
        let dated = LoadResponse(url: url, status: .notModified, headerFields: [.date: date(100), .eTag: "\"v1\""])
        let refreshed = try #require(CacheRules.refreshed(stored, by: dated, requestedAt: at100, receivedAt: at100))
        #expect(refreshed.response.headerFields[.age] == nil)
        #expect(decision(request, refreshed, at: 130) == "serve")
        #expect(decision(request, refreshed, at: 161) == "validate")
        let undated = LoadResponse(url: url, status: .notModified, headerFields: [.eTag: "\"v1\""])
        let stamped = try #require(CacheRules.refreshed(stored, by: undated, requestedAt: at100, receivedAt: at100))
        #expect(stamped.response.headerFields[.date] == date(100))
        #expect(decision(request, stamped, at: 130) == "serve")
    }

    @Test("The stored head drops the connection's fields, those Connection names, and Set-Cookie")
    func storedHead() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .connection, value: "keep-alive, X-Hop"))
        fields.append(HTTPField(name: HTTPField.Name("X-Hop")!, value: "1"))
        fields.append(HTTPField(name: HTTPField.Name("Keep-Alive")!, value: "timeout=5"))
        fields.append(HTTPField(name: .transferEncoding, value: "chunked"))
        fields.append(HTTPField(name: .setCookie, value: "a=1"))
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        fields.append(HTTPField(name: .eTag, value: "\"v1\""))
        let head = CacheRules.storedHead(of: LoadResponse(url: url, status: .ok, headerFields: fields))
        #expect(head.headerFields == [.contentType: "text/plain", .eTag: "\"v1\""])
    }

    @Test("Unsafe methods that succeed invalidate; safe ones and failures do not")
    func invalidation() {
        #expect(CacheRules.invalidates(.post, status: 200))
        #expect(CacheRules.invalidates(.delete, status: 303))
        #expect(!CacheRules.invalidates(.post, status: 500))
        #expect(!CacheRules.invalidates(.get, status: 200))
        #expect(!CacheRules.invalidates(.head, status: 200))
    }

    @Test("The memory store: least recently used first past its capacity, bodies over a twentieth refused")
    func memoryStore() async {
        let cache = MemoryResponseCache(capacity: 20_000)
        func sized(_ bytes: Int) -> CachedResponse {
            CachedResponse(response: LoadResponse(url: url, status: .ok), data: Data(count: bytes))
        }
        await cache.store(sized(900), for: "a")
        await cache.store(sized(900), for: "b")
        await cache.store(sized(1_001), for: "big")
        #expect(cache.count == 2)
        _ = await cache.cachedResponse(for: "a")
        for index in 0..<20 { await cache.store(sized(900), for: "k\(index)") }
        #expect(cache.currentSize <= 20_000)
        #expect(await cache.cachedResponse(for: "b") == nil, "the least recently used went first")
        await cache.removeAllCachedResponses()
        #expect(cache.count == 0 && cache.currentSize == 0)
    }
}
