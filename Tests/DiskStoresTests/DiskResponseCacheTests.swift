import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import DiskStores
import GRDB
import TestSupport
import Testing

@Suite("DiskResponseCache: an SQLite store kept between runs")
struct DiskResponseCacheTests {
    private let url = URL(string: "http://example.test/page")!

    private func folder() -> URL { temporaryFolder("disk-cache") }

    private func entry(_ bytes: Int, fields: HTTPFields = [:]) -> CachedResponse {
        CachedResponse(response: LoadResponse(url: url, status: .ok, headerFields: fields), data: Data(repeating: 7, count: bytes))
    }

    @Test("An entry reads back whole from a new instance on the same folder: head in order, status, varying values, times, body")
    func persists() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        var fields = HTTPFields()
        fields.append(HTTPField(name: .setCookie, value: "a=1"))
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        fields.append(HTTPField(name: .setCookie, value: "b=2"))
        let stored = CachedResponse(
            response: LoadResponse(url: url, status: HTTPResponse.Status(code: 203, reasonPhrase: "Not Quite"), headerFields: fields),
            data: Data("the body".utf8), requestedAt: Date(timeIntervalSince1970: 1_000), storedAt: Date(timeIntervalSince1970: 1_002.5),
            varyingFields: [.acceptLanguage: "fr"])
        do {
            let cache = try DiskResponseCache(directory: directory)
            await cache.store(stored, for: "k")
        }
        let reopened = try DiskResponseCache(directory: directory)
        let read = try #require(await reopened.cachedResponse(for: "k"))
        #expect(read.data == stored.data)
        #expect(read.response.status?.code == 203)
        #expect(read.response.status?.reasonPhrase == "Not Quite")
        #expect(read.response.headerFields == fields)
        #expect(read.response.url == url)
        // Kept as digests (see varyingValuesOffDisk), which match the values they were made from.
        #expect(read.varyingFields.map(\.name) == stored.varyingFields.map(\.name))
        var french = LoadRequest(url: url)
        french.headerFields[.acceptLanguage] = "fr"
        #expect(CacheRules.matches(read, french))
        #expect(read.requestedAt == stored.requestedAt)
        #expect(read.storedAt == stored.storedAt)
        #expect(await reopened.cachedResponse(for: "other") == nil)
    }

    @Test("Past its capacity the least recently used entries go; a body over a twentieth is refused")
    func eviction() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try DiskResponseCache(directory: directory, capacity: 40_000)
        await cache.store(entry(1_900), for: "a")
        await cache.store(entry(1_900), for: "b")
        await cache.store(entry(2_001), for: "big")
        #expect(await cache.count() == 2)
        _ = await cache.cachedResponse(for: "a")
        // 21 entries of 1,923 bytes (body, URL) pass 40,000 by one: the least recently used goes.
        for index in 0..<19 { await cache.store(entry(1_900), for: "k\(index)") }
        #expect(await cache.currentSize() <= 40_000)
        #expect(await cache.cachedResponse(for: "a") != nil, "read after b was stored")
        #expect(await cache.cachedResponse(for: "b") == nil, "the least recently used went first")
        await cache.removeAllCachedResponses()
        #expect(await cache.count() == 0)
    }

    /// The entries' sizes summed from the rows themselves.
    private func summed(_ cache: DiskResponseCache) throws -> Int {
        try DatabaseQueue(path: cache.fileURL.path).read { db in try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM response") ?? 0 }
    }

    @Test("The size the cache counts is its rows' own through replacements, evictions, removals and two instances on one folder")
    func totalKept() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try DiskResponseCache(directory: directory, capacity: 40_000)
        let second = try DiskResponseCache(directory: directory, capacity: 40_000)
        await first.store(entry(1_000), for: "a")
        await second.store(entry(1_500), for: "b")
        // Replaced by a smaller and then a larger body, from either instance.
        await first.store(entry(300), for: "a")
        await second.store(entry(1_800), for: "a")
        #expect(await first.currentSize() == entry(1_800).cost + entry(1_500).cost)
        // Past the capacity: the oldest go, and the count follows.
        for index in 0..<30 { await (index.isMultiple(of: 2) ? first : second).store(entry(1_700), for: "k\(index)") }
        #expect(await first.currentSize() == (try summed(first)))
        let size = await first.currentSize()
        #expect(size <= 40_000 && size > 30_000)
        await second.removeCachedResponse(for: "k29")
        #expect(await first.currentSize() == (try summed(first)))
        await first.removeAllCachedResponses()
        #expect(await second.currentSize() == 0)
    }

    @Test("A total an older version's replacements threw off is counted afresh when the cache opens, or when eviction runs out of rows")
    func totalDrift() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try DiskResponseCache(directory: directory, capacity: 40_000)
        await cache.store(entry(1_000), for: "a")
        let size = entry(1_000).cost
        // An older version replacing "a" as it did: each replacement adds to the total, none takes the old row away.
        let older = try DatabaseQueue(path: cache.fileURL.path)
        func replaceAsOlderVersion(_ times: Int) throws {
            try older.write { db in
                for _ in 0..<times {
                    try db.execute(sql: "INSERT OR REPLACE INTO response (key, head, body, size, lastUse) SELECT key, head, body, size, lastUse FROM response WHERE key = 'a'")
                }
            }
        }
        try replaceAsOlderVersion(10)
        #expect(await cache.currentSize() == 11 * size, "the drift this test is about")
        // A new opening counts afresh, in the background.
        _ = try DiskResponseCache(directory: directory, capacity: 40_000)
        var recounted = false
        for _ in 0..<250 where !recounted {
            recounted = await cache.currentSize() == size
            if !recounted { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(recounted, "not counted afresh within 5 s")
        // Past the capacity with nothing left to evict: counted afresh, and the store works again.
        try replaceAsOlderVersion(50)
        await cache.store(entry(1_000), for: "b")
        #expect(await cache.currentSize() == (try summed(cache)))
        await cache.store(entry(1_000), for: "c")
        #expect(await cache.cachedResponse(for: "c") != nil)
        #expect(await cache.currentSize() == (try summed(cache)))
    }

    @Test("A cache made before its size was counted apart opens with the count of the rows it holds")
    func totalOfOlderDatabase() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // The schema as the first release wrote it, with its migration recorded, and three rows.
        let older = try DatabaseQueue(path: directory.appendingPathComponent("responses.sqlite").path)
        try await older.write { db in
            try db.execute(sql: """
                CREATE TABLE response (key TEXT PRIMARY KEY NOT NULL, head BLOB NOT NULL, body BLOB NOT NULL, size INTEGER NOT NULL, lastUse DOUBLE NOT NULL);
                CREATE INDEX response_on_lastUse ON response(lastUse);
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('responses');
                INSERT INTO response VALUES ('a', x'00', x'00', 100, 1), ('b', x'00', x'00', 250, 2), ('c', x'00', x'00', 4000, 3);
                """)
        }
        try older.close()
        let cache = try DiskResponseCache(directory: directory, capacity: 40_000)
        #expect(await cache.currentSize() == 4_350)
        await cache.removeCachedResponse(for: "b")
        #expect(await cache.currentSize() == 4_100)
    }

    @Test("Entries used before the clock was set back are still the older: a new entry in a full cache stays, the oldest goes")
    func clockSetBack() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try DiskResponseCache(directory: directory, capacity: 40_000)
        for index in 0..<20 { await cache.store(entry(1_900), for: "k\(index)") }
        // Their uses as a clock a year ahead would have stamped them (the clock was then set back).
        let database = try DatabaseQueue(path: cache.fileURL.path)
        try await database.write { db in try db.execute(sql: "UPDATE response SET lastUse = lastUse + 31536000") }
        await cache.store(entry(1_900), for: "new")
        #expect(await cache.currentSize() <= 40_000)
        #expect(await cache.cachedResponse(for: "new") != nil, "the entry just stored was evicted as the oldest")
        #expect(await cache.cachedResponse(for: "k0") == nil, "the least recently used went")
    }

    @Test("A folder that cannot hold the database fails to open, naming it")
    func openFails() throws {
        let file = folder()
        try Data("not a folder".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect {
            _ = try DiskResponseCache(directory: file)
        } throws: { error in
            (error as? DiskStoreOpenError)?.description.contains(file.path) == true
        }
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 4096).write(to: directory.appendingPathComponent("responses.sqlite"))
        #expect(throws: DiskStoreOpenError.self) { _ = try DiskResponseCache(directory: directory) }
    }

    private func session(_ cache: any ResponseCache) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.responseCache = cache
        return LoaderSession(configuration: configuration)
    }

    private func nginx(_ path: String) throws -> URL {
        let nginx = try #require(TestServers.nginx, "scripts/test-servers could not start nginx")
        return URL(string: "http://127.0.0.1:\(nginx.httpPort)\(path)")!
    }

    private func logged(_ token: String) throws -> Int {
        let log = try #require(TestServers.nginx).cacheLog
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains(token) }.count
    }

    @Test("The request values an entry varies on stay off the disk (a session cookie): kept as digests, which match the same value and no other")
    func varyingValuesOffDisk() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = "sessionid=\(UUID().uuidString)"
        let stored = CachedResponse(response: LoadResponse(url: url, status: .ok, headerFields: [.cacheControl: "private, max-age=300"]),
                                    data: Data("one user's page".utf8), varyingFields: [.cookie: secret])
        do {
            let cache = try DiskResponseCache(directory: directory)
            await cache.store(stored, for: "k")
        }
        // Every file SQLite wrote (the database, its journal or write-ahead log).
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "the cookie is in \(name)")
        }
        let read = try #require(await DiskResponseCache(directory: directory).cachedResponse(for: "k"))
        var same = LoadRequest(url: url)
        same.headerFields[.cookie] = secret
        var other = LoadRequest(url: url)
        other.headerFields[.cookie] = "sessionid=someone-else"
        #expect(CacheRules.matches(read, same))
        #expect(!CacheRules.matches(read, other))
        #expect(!CacheRules.matches(read, LoadRequest(url: url)))
    }

    @Test("A URL's password stays off the disk: not in the key, not in the stored head; the entry is served under the URL asked for")
    func passwordOffDisk() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = "pw\(UUID().uuidString.prefix(8))"
        let plain = try nginx("/cache/stamp?t=\(UUID().uuidString)")
        var parts = try #require(URLComponents(url: plain, resolvingAgainstBaseURL: false))
        (parts.user, parts.password) = ("ann", secret)
        let url = try #require(parts.url)
        let (first, _) = try await session(try DiskResponseCache(directory: directory)).data(from: url)
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "the password is in \(name)")
        }
        let (second, response) = try await session(try DiskResponseCache(directory: directory)).data(from: url)
        #expect(second == first && response.headerFields[.age] != nil, "served from the store")
        #expect(response.url == url)
    }

    @Test("On a full disk a newer answer that cannot be stored removes the older entry, which no longer stands for it")
    func fullDiskRemovesOlder() async throws {
        try await TestServers.withFullDisk { directory in
            let cache = try DiskResponseCache(directory: directory.appendingPathComponent("cache"), capacity: 20_000_000)
            let url = try nginx("/cache/fresh/300k.bin?t=\(UUID().uuidString)")
            let key = CachedResponse.key(for: url)
            await cache.store(CachedResponse(response: LoadResponse(url: url, status: .ok, headerFields: [.cacheControl: "max-age=300"]),
                                             data: Data("older".utf8)), for: key)
            #expect(await cache.cachedResponse(for: key) != nil, "the small older entry could not be stored")
            var request = LoadRequest(url: url)
            request.cachePolicy = .reloadIgnoringLocalCacheData
            _ = try await session(cache).data(for: request)
            #expect(await cache.cachedResponse(for: key) == nil)
        }
    }

    @Test("A response stored by one session answers another that opens the same folder later, without reaching nginx")
    func acrossSessions() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = UUID().uuidString
        let url = try nginx("/cache/stamp?t=\(token)")
        let (first, _) = try await session(try DiskResponseCache(directory: directory)).data(from: url)
        let (second, response) = try await session(try DiskResponseCache(directory: directory)).data(from: url)
        #expect(second == first)
        #expect(response.headerFields[.age] != nil)
        #expect(try logged(token) == 1)
    }

    @Test("On a full disk the response still reaches the caller whole; nothing is stored, the next load asks nginx")
    func fullDisk() async throws {
        try await TestServers.withFullDisk { directory in
            let cache = try DiskResponseCache(directory: directory.appendingPathComponent("cache"), capacity: 20_000_000)
            let token = UUID().uuidString
            let url = try nginx("/cache/fresh/300k.bin?t=\(token)")
            let expected = try Data(contentsOf: URL(fileURLWithPath: try #require(TestServers.nginx).root + "/cache/300k.bin"))
            let (first, _) = try await session(cache).data(from: url)
            #expect(Bytes.difference(first, expected) == nil)
            #expect(await cache.count() == 0)
            let (second, _) = try await session(cache).data(from: url)
            #expect(Bytes.difference(second, expected) == nil)
            #expect(try logged(token) == 2)
        }
    }
}

@Suite("Disk stores: rows that something else wrote")
struct UnreadableRowsTests {
    private func folder() -> URL { temporaryFolder("disk-rows") }

    @Test("A cache row whose head is not JSON, not a blob, or holds an impossible status is a miss and is removed")
    func cacheRows() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try DiskResponseCache(directory: directory)
        let good = CachedResponse(response: LoadResponse(url: URL(string: "http://example.test/")!, status: .ok), data: Data("ok".utf8))
        await cache.store(good, for: "good")
        let impossible = String(decoding: try JSONEncoder().encode(["url": "http://example.test/"]), as: UTF8.self)
            .replacingOccurrences(of: "}", with: #","status":5000,"fields":[],"varying":[],"requestedAt":0,"storedAt":0}"#)
        let database = try DatabaseQueue(path: cache.fileURL.path)
        try await database.write { db in
            let insert = "INSERT INTO response (key, head, body, size, lastUse) VALUES (?, ?, ?, 1, 0)"
            try db.execute(sql: insert, arguments: ["text", Data("not json".utf8), Data()])
            try db.execute(sql: insert, arguments: ["integer", 5, Data()])
            try db.execute(sql: insert, arguments: ["status", Data(impossible.utf8), Data()])
        }
        #expect(await cache.count() == 4)
        let vacuum = try await database.read { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") }
        #expect(vacuum == 1, "freed pages go back to the file system (auto_vacuum FULL)")
        for key in ["text", "integer", "status"] {
            #expect(await cache.cachedResponse(for: key) == nil, "\(key)")
        }
        #expect(await cache.count() == 1)
        #expect(await cache.cachedResponse(for: "good")?.data == Data("ok".utf8))
    }

    @Test("A cookie row of the wrong types is dropped when the jar opens; the others are read")
    func cookieRows() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let site = URL(string: "https://example.com/")!
        let jar = try DiskCookieJar(directory: directory)
        jar.save(setCookie: ["good=1; Max-Age=3600"], from: site)
        await jar.synchronize()
        let database = try DatabaseQueue(path: jar.fileURL.path)
        try await database.write { db in
            try db.execute(sql: """
                INSERT INTO cookie (name, domain, path, value, hostOnly, expires, secure, httpOnly, sameSite, created)
                VALUES ('bad', 'example.com', '/', 'x', 'yes', 'tomorrow', 0, 0, NULL, 0)
                """)
        }
        let reopened = try DiskCookieJar(directory: directory)
        #expect(reopened.cookieField(for: site) == "good=1")
        let rows = try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM cookie") }
        #expect(rows == 1, "the unreadable row is gone from the disk")
    }
}
