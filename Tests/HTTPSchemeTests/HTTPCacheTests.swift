import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

/// The requests nginx logged under `/cache/` since a test began, those whose URI holds the test's token.
struct CacheLog {
    let path: String
    let token: String
    let start: Int

    init(token: String = UUID().uuidString) throws {
        path = try Nginx.require().cacheLog
        self.token = token
        start = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// The lines logged since ``start`` with the token, once there are at least `count` of them (or 5 s passed):
    /// nginx writes a request's line as the request ends, which may be just after its client has the response.
    func lines(atLeast count: Int) async -> [String] {
        _ = await eventually(within: 5) { lines.count >= count }
        return lines
    }

    /// The lines logged since ``start`` with the token, now.
    var lines: [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        try? handle.seek(toOffset: UInt64(start))
        let text = String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
        return text.split(separator: "\n").map(String.init).filter { $0.contains(token) }
    }
}

@Suite("HTTP cache: RFC 9111 against a real nginx")
struct HTTPCacheTests {
    private func session(_ cache: MemoryResponseCache) throws -> LoaderSession {
        try Nginx.session { $0.responseCache = cache }
    }

    private func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    @Test("A fresh response (max-age) answers the next request without reaching the server, with its Age")
    func freshHit() async throws {
        let cache = MemoryResponseCache()
        let session = try session(cache)
        let log = try CacheLog()
        let url = try Nginx.http("/cache/stamp?t=\(log.token)")
        let (first, firstResponse) = try await session.data(from: url)
        let (second, secondResponse) = try await session.data(from: url)
        #expect(text(first).count == 33)
        #expect(second == first, "the second body should be the stored one")
        #expect(await log.lines(atLeast: 1).count == 1)
        #expect(firstResponse.headerFields[.age] == nil)
        #expect(secondResponse.status == .ok)
        #expect(secondResponse.headerFields[.age].flatMap { Int($0) }.map { $0 >= 0 && $0 < 3600 } == true)
        #expect(secondResponse.expectedContentLength == 33)
        #expect(cache.count == 1)
    }

    @Test("Expires, with no max-age, gives freshness too")
    func expires() async throws {
        let session = try session(MemoryResponseCache())
        let log = try CacheLog()
        let url = try Nginx.http("/cache/stamp-expires?t=\(log.token)")
        let (first, _) = try await session.data(from: url)
        let (second, _) = try await session.data(from: url)
        #expect(second == first)
        #expect(await log.lines(atLeast: 1).count == 1)
    }

    @Test("no-cache: each request is validated with If-None-Match, and the 304 is answered with the stored body")
    func revalidated() async throws {
        let session = try session(MemoryResponseCache())
        let log = try CacheLog()
        let url = try Nginx.http("/cache/revalidate/page.txt?t=\(log.token)")
        let (first, firstResponse) = try await session.data(from: url)
        let (second, secondResponse) = try await session.data(from: url)
        #expect(text(first) == "A page to keep\n")
        #expect(second == first)
        #expect(secondResponse.status == .ok, "the caller sees the stored 200, not the 304")
        #expect(secondResponse.headerFields[.eTag] == firstResponse.headerFields[.eTag])
        let lines = await log.lines(atLeast: 2)
        #expect(lines.count == 2, "\(lines)")
        let etag = try #require(firstResponse.headerFields[.eTag]).replacingOccurrences(of: "\"", with: "\\x22")
        #expect(lines.last?.hasSuffix(" 304 inm=\(etag) ims=\(firstResponse.headerFields[.lastModified] ?? "?")") == true, "\(lines)")
        #expect(lines.first?.contains(" 200 inm=- ims=-") == true, "\(lines)")
    }

    @Test("no-store: nothing is stored, every request reaches the server")
    func noStore() async throws {
        let cache = MemoryResponseCache()
        let session = try session(cache)
        let log = try CacheLog()
        let url = try Nginx.http("/cache/no-store/page.txt?t=\(log.token)")
        _ = try await session.data(from: url)
        _ = try await session.data(from: url)
        #expect(await log.lines(atLeast: 2).count == 2)
        #expect(log.lines.allSatisfy { $0.hasSuffix(" 200 inm=- ims=-") }, "\(log.lines)")
        #expect(cache.count == 0)
    }

    @Test("A stale response without validators is loaded again")
    func staleReloaded() async throws {
        let session = try session(MemoryResponseCache())
        let log = try CacheLog()
        let url = try Nginx.http("/cache/stamp-stale?t=\(log.token)")
        let (first, _) = try await session.data(from: url)
        let (second, _) = try await session.data(from: url)
        #expect(first != second)
        #expect(await log.lines(atLeast: 2).count == 2)
    }

    @Test("Heuristic freshness: a page unchanged for ten days, with no Cache-Control, is fresh for a while")
    func heuristic() async throws {
        let session = try session(MemoryResponseCache())
        // No query (a URL with one gets no heuristic freshness): the path itself is the test's own.
        let log = try CacheLog(token: "/cache/heuristic/old.txt ")
        let url = try Nginx.http("/cache/heuristic/old.txt")
        let (first, _) = try await session.data(from: url)
        let (second, _) = try await session.data(from: url)
        #expect(text(first) == "An old page\n")
        #expect(second == first)
        #expect(await log.lines(atLeast: 1).count == 1)
    }

    @Test("Vary: a request with another value of the named field is not answered from the stored response")
    func vary() async throws {
        let session = try session(MemoryResponseCache())
        let log = try CacheLog()
        let url = try Nginx.http("/cache/vary/page.txt?t=\(log.token)")
        func load(_ variant: String) async throws {
            var request = LoadRequest(url: url)
            request.headerFields[HTTPField.Name("X-Variant")!] = variant
            _ = try await session.data(for: request)
        }
        try await load("a")
        try await load("a")
        #expect(await log.lines(atLeast: 1).count == 1)
        try await load("b")
        #expect(await log.lines(atLeast: 2).count == 2)
    }

    @Test("A successful POST makes the stored response for its URL out of date")
    func postInvalidates() async throws {
        let session = try session(MemoryResponseCache())
        let url = try Nginx.http("/cache/stamp?t=\(UUID().uuidString)")
        let (first, _) = try await session.data(from: url)
        var post = LoadRequest(url: url)
        post.method = .post
        _ = try await session.data(for: post)
        let (after, _) = try await session.data(from: url)
        #expect(after != first)
    }

    @Test("Cache policies: returnCacheDataElseLoad takes a stale entry, reloadIgnoringLocalCacheData goes to the server")
    func policies() async throws {
        let session = try session(MemoryResponseCache())
        let log = try CacheLog()
        let url = try Nginx.http("/cache/stamp-stale?t=\(log.token)")
        let dontLoad = await loadError { _ = try await session.data(for: LoadRequest(url: url, cachePolicy: .returnCacheDataDontLoad)) }
        #expect(dontLoad?.code == .resourceUnavailable)
        #expect(dontLoad?.url == url)
        let (stored, _) = try await session.data(from: url)
        let (elseLoad, _) = try await session.data(for: LoadRequest(url: url, cachePolicy: .returnCacheDataElseLoad))
        let (onlyStored, _) = try await session.data(for: LoadRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
        #expect(elseLoad == stored)
        #expect(onlyStored == stored)
        #expect(await log.lines(atLeast: 1).count == 1)
        let (reloaded, _) = try await session.data(for: LoadRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData))
        #expect(reloaded != stored)
        let (latest, _) = try await session.data(for: LoadRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
        #expect(latest == reloaded, "the reload's answer is stored")
        #expect(await log.lines(atLeast: 2).count == 2)
    }

    @Test("A request's own Cache-Control: no-cache validates a fresh entry; only-if-cached with nothing stored is 504")
    func requestDirectives() async throws {
        let session = try session(MemoryResponseCache())
        let log = try CacheLog()
        let url = try Nginx.http("/cache/fresh/page.txt?t=\(log.token)")
        var onlyIfCached = LoadRequest(url: url)
        onlyIfCached.headerFields[.cacheControl] = "only-if-cached"
        let (_, gateway) = try await session.data(for: onlyIfCached)
        #expect(gateway.status == .gatewayTimeout)
        #expect(log.lines.isEmpty)
        _ = try await session.data(from: url)
        var noCache = LoadRequest(url: url)
        noCache.headerFields[.cacheControl] = "no-cache"
        let (body, response) = try await session.data(for: noCache)
        #expect(text(body) == "A page to keep\n")
        #expect(response.status == .ok)
        #expect(await log.lines(atLeast: 2).count == 2)
        #expect(log.lines.last?.contains(" 304 inm=\\x22") == true, "\(log.lines)")
        let (_, cached) = try await session.data(for: onlyIfCached)
        #expect(cached.status == .ok)
        #expect(await log.lines(atLeast: 2).count == 2)
    }

    @Test("The app's own If-None-Match passes by the cache: its 304 reaches the app")
    func appConditions() async throws {
        let session = try session(MemoryResponseCache())
        let url = try Nginx.http("/cache/fresh/page.txt?t=\(UUID().uuidString)")
        let (_, response) = try await session.data(from: url)
        let etag = try #require(response.headerFields[.eTag])
        var conditional = LoadRequest(url: url)
        conditional.headerFields[.ifNoneMatch] = etag
        let (body, answer) = try await session.data(for: conditional)
        #expect(answer.status == .notModified)
        #expect(body.isEmpty)
    }

    @Test("A stored response is served without the Set-Cookie it came with: the cookie store saves it once")
    func setCookieNotReplayed() async throws {
        let cookies = RecordingCookieStore()
        let session = try Nginx.session { $0.responseCache = MemoryResponseCache(); $0.cookieStore = cookies }
        let url = try Nginx.http("/cache/stamp-cookie?t=\(UUID().uuidString)")
        let (first, origin) = try await session.data(from: url)
        let (second, hit) = try await session.data(from: url)
        #expect(second == first)
        #expect(origin.headerFields[.setCookie]?.hasPrefix("visit=") == true)
        #expect(hit.headerFields[.setCookie] == nil)
        #expect(cookies.saved.count == 1, "\(cookies.saved)")
    }

    @Test("A 304 that sets a cookie hands it up to the cookie store, and the stored head keeps none")
    func setCookieOnRevalidation() async throws {
        let cookies = RecordingCookieStore()
        let cache = MemoryResponseCache()
        let session = try Nginx.session { $0.responseCache = cache; $0.cookieStore = cookies }
        let log = try CacheLog()
        let url = try Nginx.http("/cache/revalidate-cookie/page.txt?t=\(log.token)")
        _ = try await session.data(from: url)
        let (body, response) = try await session.data(from: url)
        #expect(text(body) == "A page to keep\n")
        #expect(await log.lines(atLeast: 2).last?.contains(" 304 ") == true, "\(log.lines)")
        #expect(response.headerFields[.setCookie]?.hasPrefix("seen=") == true)
        #expect(cookies.saved.count == 2, "\(cookies.saved)")
        #expect(Set(cookies.saved).count == 2, "each answer set its own value")
        let stored = await cache.cachedResponse(for: CachedResponse.key(for: url))
        #expect(stored != nil && stored?.response.headerFields[.setCookie] == nil)
    }

    @Test("A request with credentials passes by the cache: its answer is not stored, and no stored answer is given to it")
    func credentials() async throws {
        let cache = MemoryResponseCache()
        let session = try session(cache)
        let log = try CacheLog()
        let url = try Nginx.http("/cache/stamp?t=\(log.token)")
        var authorized = LoadRequest(url: url)
        authorized.headerFields[.authorization] = "Basic dXNlcjpzZWNyZXQ="
        let (mine, _) = try await session.data(for: authorized)
        #expect(cache.count == 0)
        let (anyone, _) = try await session.data(from: url)
        #expect(anyone != mine)
        let (again, _) = try await session.data(for: authorized)
        #expect(again != anyone, "the stored answer is not given to a request with credentials")
        #expect(await log.lines(atLeast: 3).count == 3)
        // only-if-cached allows no answer but the store's, which such a request never gets: 504, nginx not asked.
        authorized.headerFields[.cacheControl] = "only-if-cached"
        let (_, gateway) = try await session.data(for: authorized)
        #expect(gateway.status == .gatewayTimeout)
        var conditional = LoadRequest(url: url)
        (conditional.headerFields[.ifNoneMatch], conditional.headerFields[.cacheControl]) = ("\"x\"", "only-if-cached")
        #expect(try await session.data(for: conditional).1.status == .gatewayTimeout)
        _ = try await session.data(for: LoadRequest(url: try Nginx.http("/cache/stamp-stale?t=\(log.token)")))
        #expect(await log.lines(atLeast: 4).count == 4, "only the last request, after the two 504s, reached nginx: \(log.lines)")
    }

    @Test("A POST that succeeds while a GET of its URL is still arriving keeps that GET's body out of the store")
    func invalidatedWhileArriving() async throws {
        let cache = MemoryResponseCache()
        let session = try session(cache)
        let url = try Nginx.http("/cache/stamp?t=\(UUID().uuidString)")
        // The body is stored when read to its end: read it only after the POST.
        let (bytes, _) = try await session.bytes(from: url)
        var post = LoadRequest(url: url)
        post.method = .post
        _ = try await session.data(for: post)
        var before = Data()
        for try await byte in bytes { before.append(byte) }
        #expect(before.count == 33)
        #expect(cache.count == 0, "the body that arrived before the change is not stored")
        let (after, _) = try await session.data(from: url)
        #expect(after != before, "the next GET reaches nginx")
        #expect(await cache.cachedResponse(for: CachedResponse.key(for: url))?.data == after)
    }

    @Test("An older answer read to its end after a newer one was stored does not replace it (RFC 9111 §4: the most recent)")
    func olderAnswerKeepsOut() async throws {
        let cache = MemoryResponseCache()
        let session = try session(cache)
        let url = try Nginx.http("/cache/stamp?t=\(UUID().uuidString)")
        let key = CachedResponse.key(for: url)
        // The first GET's body is stored when read to its end: read it only after a reload has stored a newer one.
        let (bytes, _) = try await session.bytes(from: url)
        var reload = LoadRequest(url: url)
        reload.cachePolicy = .reloadIgnoringLocalCacheData
        let (newer, _) = try await session.data(for: reload)
        #expect(await cache.cachedResponse(for: key)?.data == newer)
        var older = Data()
        for try await byte in bytes { older.append(byte) }
        #expect(older.count == 33 && older != newer, "nginx's stamps differ")
        #expect(await cache.cachedResponse(for: key)?.data == newer, "the app showed the newer answer; the store keeps it")
        let (served, _) = try await session.data(from: url)
        #expect(served == newer)
    }

    @Test("A newer answer that is not stored after all (longer than the store takes) removes the older entry")
    func newerUnstoredReplaces() async throws {
        let cache = MemoryResponseCache(capacity: 1_000_000)
        let url = try Nginx.http("/cache/chunked/lines.txt?t=\(UUID().uuidString)")
        let key = CachedResponse.key(for: url)
        await cache.store(CachedResponse(response: LoadResponse(url: url, status: .ok, headerFields: [.cacheControl: "max-age=600"]),
                                         data: Data("old\n".utf8), varyingFields: [.acceptEncoding: ""]), for: key)
        var reload = LoadRequest(url: url)
        reload.cachePolicy = .reloadIgnoringLocalCacheData
        let (body, response) = try await session(cache).data(for: reload)
        #expect(response.expectedContentLength == nil, "decoded, the body has no length to refuse it by up front")
        #expect(body.count > 1_000_000 / 20)
        #expect(await cache.cachedResponse(for: key) == nil, "the old entry would be served next, older than what the app has")
        let (again, _) = try await session(cache).data(from: url)
        #expect(Bytes.difference(again, body) == nil, "nginx's answer again, not the old entry")
    }

    @Test("A request's own Accept-Encoding gets the body as sent, and a plain request never gets that body")
    func acceptEncoding() async throws {
        // Room for the 3 MB text.
        let session = try session(MemoryResponseCache(capacity: 100_000_000))
        let log = try CacheLog()
        let root = try Nginx.require().root
        let lines = try Data(contentsOf: URL(fileURLWithPath: root + "/gz/lines.txt"))
        let url = try Nginx.http("/cache/gz/lines.txt?t=\(log.token)")
        var raw = LoadRequest(url: url)
        raw.headerFields[.acceptEncoding] = "gzip"
        let (compressed, rawResponse) = try await session.data(for: raw)
        #expect(rawResponse.headerFields[.contentEncoding] == "gzip")
        #expect(compressed.count < lines.count / 4)
        let (decoded, _) = try await session.data(from: url)
        #expect(Bytes.difference(decoded, lines) == nil)
        let (again, _) = try await session.data(from: url)
        #expect(Bytes.difference(again, lines) == nil)
        #expect(await log.lines(atLeast: 2).count == 2, "the plain request's answer is stored for plain requests")
    }

    @Test("A permanent redirect with max-age is stored: the next load follows it from the store, reaching nginx no more")
    func redirectStored() async throws {
        let session = try session(MemoryResponseCache())
        let log = try CacheLog()
        let url = try Nginx.http("/cache/moved?t=\(log.token)")
        let (first, response) = try await session.data(from: url)
        #expect(response.url.path == "/cache/stamp")
        #expect(await log.lines(atLeast: 2).count == 2)
        let (second, _) = try await session.data(from: url)
        #expect(second == first)
        #expect(await log.lines(atLeast: 2).count == 2)
    }

    @Test("A successful POST whose answer points elsewhere (303 Location) makes that URL's stored response out of date")
    func locationInvalidated() async throws {
        let session = try session(MemoryResponseCache())
        let token = UUID().uuidString
        let stamp = try Nginx.http("/cache/stamp?t=\(token)")
        let (first, _) = try await session.data(from: stamp)
        var post = LoadRequest(url: try Nginx.http("/cache/post-redirect?t=\(token)"))
        post.method = .post
        // The redirect layer follows the 303 with a GET of the stamp: answered by nginx, since it was dropped.
        let (followed, _) = try await session.data(for: post)
        #expect(followed != first)
        let (after, _) = try await session.data(from: stamp)
        #expect(after == followed, "the followed GET's answer is the one stored now")
    }

    @Test("A body larger than the store takes reaches the caller whole and is not stored, with a length or without")
    func tooLarge() async throws {
        // A twentieth of 1 MB: the 300 kB file (with a Content-Length) and the 3 MB decoded text (chunked) are over it.
        let small = MemoryResponseCache(capacity: 1_000_000)
        let root = try Nginx.require().root
        let (data, _) = try await session(small).data(from: Nginx.http("/cache/fresh/300k.bin?t=\(UUID().uuidString)"))
        #expect(Bytes.difference(data, try Data(contentsOf: URL(fileURLWithPath: root + "/cache/300k.bin"))) == nil)
        let lines = try Data(contentsOf: URL(fileURLWithPath: root + "/gz/lines.txt"))
        let chunked = try Nginx.http("/cache/chunked/lines.txt?t=\(UUID().uuidString)")
        let (text, response) = try await session(small).data(from: chunked)
        #expect(response.expectedContentLength == nil)
        #expect(Bytes.difference(text, lines) == nil)
        #expect(small.count == 0)
        // The same body is kept by a store large enough (its Last-Modified makes it storable).
        let large = MemoryResponseCache(capacity: 100_000_000)
        _ = try await session(large).data(from: chunked)
        #expect(await large.cachedResponse(for: CachedResponse.key(for: chunked))?.data.count == lines.count)
    }

    @Test("A streamed body is stored once read to its end")
    func streamed() async throws {
        let cache = MemoryResponseCache()
        let session = try session(cache)
        let whole = try Nginx.http("/cache/fresh/300k.bin?t=\(UUID().uuidString)")
        var count = 0
        let (bytes, _) = try await session.bytes(from: whole)
        for try await _ in bytes { count += 1 }
        #expect(count == 300_000)
        #expect(await cache.cachedResponse(for: CachedResponse.key(for: whole))?.data.count == 300_000)
    }

    @Test("A body cut short fails the load, naming its URL, and nothing of it is stored")
    func truncatedNotStored() async throws {
        let cache = MemoryResponseCache()
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.responseCache = cache
        let session = LoaderSession(configuration: configuration)
        let url = ScriptedServer.shared.url("/cache-truncated")
        let error = await loadError { _ = try await session.data(from: url) }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.url == url)
        #expect(cache.count == 0)
    }
}

/// A cookie store that sends nothing and records each `Set-Cookie` value it is given.
final class RecordingCookieStore: CookieStore {
    private let values = Locked([String]())

    var saved: [String] { values.withLock { $0 } }

    func cookieField(for url: URL) -> String? { nil }

    func save(setCookie values: [String], from url: URL) {
        self.values.withLock { $0.append(contentsOf: values) }
    }
}
