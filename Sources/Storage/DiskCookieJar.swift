import Cookies
import Foundation
import GRDB
import Loader

/// A ``Cookies/CookieJar`` whose persistent cookies (those with an expiry) are kept on disk: an SQLite database
/// (through GRDB) in a folder of its own, read back when the jar is opened again, as a browser's cookie store
/// is. Session cookies (no `Expires` or `Max-Age`) live as long as this object, as they would in the jar.
///
/// ```swift
/// var configuration = LoaderSession.Configuration.default
/// configuration.cookieStore = try DiskCookieJar(directory: appSupport.appendingPathComponent("cookies"))
/// ```
///
/// The rules are ``Cookies/CookieJar``'s. Each change is written in the background, in order; ``synchronize()``
/// waits until every change so far is on disk (call it before the process ends). A write that fails (a full disk)
/// leaves the cookies in memory as they are, and the next change or ``synchronize()`` writes again what the disk
/// lacks. Rows that do not read as cookies are dropped when the jar is opened.
public final class DiskCookieJar: CookieStore {
    /// The jar in memory: the cookies and RFC 6265's rules. Private: a change made through it would skip the disk.
    private let jar: CookieJar
    /// The database file.
    public let fileURL: URL

    private let database: DatabasePool
    /// The persistent cookies as last handed to the database, by name, domain and path.
    private let written: Locked<[Key: Cookie]>

    private struct Key: Hashable {
        var name: String
        var domain: String
        var path: String
        init(_ cookie: Cookie) { (name, domain, path) = (cookie.name, cookie.domain, cookie.path) }
    }

    /// Opens the jar kept in `directory`, making the folder and its database if they do not exist; cookies that
    /// expired meanwhile are dropped.
    /// - Parameters:
    ///   - directory: A folder for the jar alone.
    ///   - publicSuffixes: The list that tells which domains may not take cookies.
    public init(directory: URL, publicSuffixes: PublicSuffixList = .shipped) throws {
        (database, fileURL) = try DiskDatabase.open("cookies.sqlite", in: directory, migrator: Self.migrator)
        jar = CookieJar(publicSuffixes: publicSuffixes)
        let stored: [Cookie]
        do {
            stored = try database.write { db in
                var cookies: [Cookie] = []
                for row in try Row.fetchAll(db, sql: "SELECT rowid, * FROM cookie ORDER BY created") {
                    if let cookie = try? Self.cookie(row) {
                        cookies.append(cookie)
                    } else {
                        // A row something else wrote, which does not read as a cookie: gone, not a crash.
                        try db.execute(sql: "DELETE FROM cookie WHERE rowid = ?", arguments: [row["rowid"] as Int64?])
                    }
                }
                return cookies
            }
        } catch {
            throw DiskStoreOpenError(directory: directory, underlying: error)
        }
        for cookie in stored { jar.insert(cookie) }
        // What the jar did not take (expired, or past its limits) goes from the disk too.
        written = Locked(Dictionary(stored.map { (Key($0), $0) }, uniquingKeysWith: { $1 }))
        persist()
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("cookies") { db in
            try db.create(table: "cookie") { table in
                table.column("name", .text).notNull()
                table.column("domain", .text).notNull()
                table.column("path", .text).notNull()
                table.column("value", .text).notNull()
                table.column("hostOnly", .boolean).notNull()
                table.column("expires", .double).notNull()
                table.column("secure", .boolean).notNull()
                table.column("httpOnly", .boolean).notNull()
                table.column("sameSite", .text)
                table.column("created", .double).notNull()
                table.primaryKey(["name", "domain", "path"])
            }
        }
        return migrator
    }

    /// The cookie a row holds; throws for a value of the wrong type (GRDB's subscripts would trap).
    private static func cookie(_ row: Row) throws -> Cookie {
        try Cookie(name: row.decode(forColumn: "name"), value: row.decode(forColumn: "value"), domain: row.decode(forColumn: "domain"),
                   isHostOnly: row.decode(forColumn: "hostOnly"), path: row.decode(forColumn: "path"),
                   expires: Date(timeIntervalSince1970: row.decode(forColumn: "expires")), isSecure: row.decode(forColumn: "secure"),
                   isHTTPOnly: row.decode(forColumn: "httpOnly"), sameSite: row.decode(String?.self, forColumn: "sameSite"),
                   created: Date(timeIntervalSince1970: row.decode(forColumn: "created")))
    }

    /// Every cookie kept and not expired, session cookies included.
    public var cookies: [Cookie] { jar.cookies }

    /// The cookies a request to `url` would carry.
    public func cookies(for url: URL) -> [Cookie] { jar.cookies(for: url) }

    /// Stores `cookie` as it is (see ``Cookies/CookieJar/insert(_:)``), and on disk if it has an expiry.
    public func insert(_ cookie: Cookie) {
        jar.insert(cookie)
        persist()
    }

    /// Removes every cookie, on disk too.
    public func removeAll() {
        jar.removeAll()
        persist()
    }

    /// The jar's `Cookie` field for `url`.
    public func cookieField(for url: URL) -> String? { jar.cookieField(for: url) }

    /// Stores what `values` set by the jar's rules, then writes what changed among the persistent cookies.
    public func save(setCookie values: [String], from url: URL) {
        jar.save(setCookie: values, from: url)
        persist()
    }

    /// Writes what differs from the disk (a change whose write failed is tried again) and waits until every
    /// change made so far is written, or failed to be; a cancelled caller waits too. Returns whether the disk then
    /// holds every persistent cookie as the jar does: `false` when a write failed (a full disk), which the next
    /// change or call tries again.
    @discardableResult
    public func synchronize() async -> Bool {
        persist()
        // Queued after the writes, whose completions (which note a failure) run on the writer's queue before it.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            database.asyncWriteWithoutTransaction { _ in done.resume() }
        }
        return written.withLock { written in Self.persistent(in: jar) == written }
    }

    /// The jar's cookies that belong on disk (those with an expiry, not yet expired), by key.
    private static func persistent(in jar: CookieJar) -> [Key: Cookie] {
        let now = Date()
        var current: [Key: Cookie] = [:]
        for cookie in jar.cookies where cookie.expires != nil && !cookie.isExpired(at: now) { current[Key(cookie)] = cookie }
        return current
    }

    /// Hands the database what differs between the jar's persistent cookies and what was last handed to it.
    /// The jar is read and the write queued under one lock, so that writes reach the disk in the order of the
    /// states they were taken from.
    private func persist() {
        written.withLock { written in
            let current = Self.persistent(in: jar)
            let changed = current.values.filter { written[Key($0)] != $0 }
            let removed = written.keys.filter { current[$0] == nil }
            guard !changed.isEmpty || !removed.isEmpty else { return }
            // What the disk held before, for the keys this write touches: if it fails (a full disk), `written`
            // says so again, and the next change (or synchronize()) sends these keys anew.
            var before: [Key: Cookie?] = [:]
            for cookie in changed { before[Key(cookie)] = written[Key(cookie)] }
            for key in removed { before[key] = written[key] }
            written = current
            let restore = before
            database.asyncWrite({ db in
                for key in removed {
                    try db.execute(sql: "DELETE FROM cookie WHERE name = ? AND domain = ? AND path = ?",
                                   arguments: [key.name, key.domain, key.path])
                }
                for cookie in changed {
                    try db.execute(sql: """
                        INSERT OR REPLACE INTO cookie (name, domain, path, value, hostOnly, expires, secure, httpOnly, sameSite, created)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, arguments: [cookie.name, cookie.domain, cookie.path, cookie.value, cookie.isHostOnly,
                                         cookie.expires?.timeIntervalSince1970 ?? 0, cookie.isSecure, cookie.isHTTPOnly,
                                         cookie.sameSite, cookie.created.timeIntervalSince1970])
                }
            }, completion: { [weak self] _, result in
                guard case .failure = result, let self else { return }
                self.written.withLock { written in
                    for (key, cookie) in restore { written[key] = cookie }
                }
            })
        }
    }
}
