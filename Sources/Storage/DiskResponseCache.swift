import Foundation
import GRDB
import Loader

/// A ``ResponseCache`` on disk: an SQLite database (through GRDB) in a folder of its own, kept between runs and
/// shared by the sessions and processes that open the same folder. Past ``capacity`` the least recently used
/// entries go first.
///
/// A store that fails (a full disk, a file that is not a database any more) loses only what it would have kept:
/// a look-up then finds nothing and a response is not stored, and the load goes on. Opening fails with a
/// ``DiskStoreOpenError`` naming the folder.
public final class DiskResponseCache: ResponseCache {
    /// Bytes the bodies and heads may take together.
    public let capacity: Int
    /// The largest body kept: a twentieth of the capacity, so that one response cannot empty the cache.
    public var maximumEntrySize: Int { capacity / 20 }
    /// The database file.
    public let fileURL: URL

    private let database: DatabasePool

    /// Opens the cache kept in `directory`, making the folder and its database if they do not exist.
    /// - Parameters:
    ///   - directory: A folder for the cache alone.
    ///   - capacity: Bytes the entries may take together (100 MiB by default).
    public init(directory: URL, capacity: Int = 100 * 1024 * 1024) throws {
        self.capacity = max(0, capacity)
        (database, fileURL) = try DiskDatabase.open("responses.sqlite", in: directory, migrator: Self.migrator)
        // Counted afresh once per opening, in the background (opening waits for no other process's write): an older
        // version of this store writing to the folder meanwhile (its replacements add to the total without taking away)
        // leaves it off. If the disk takes no write, it stays.
        database.asyncWriteWithoutTransaction { db in try? Self.recount(db) }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("responses") { db in
            try db.create(table: "response") { table in
                table.primaryKey("key", .text)
                table.column("head", .blob).notNull()
                table.column("body", .blob).notNull()
                table.column("size", .integer).notNull()
                table.column("lastUse", .double).notNull().indexed()
            }
        }
        // The entries' total size, kept by triggers in every process that writes: summing the column scanned the
        // whole table, each row's body with it (`size` comes after `body`, so SQLite walks a large body's overflow
        // pages to reach it), at every store.
        migrator.registerMigration("total") { db in
            try db.execute(sql: """
                CREATE TABLE total (bytes INTEGER NOT NULL);
                INSERT INTO total (bytes) SELECT COALESCE(SUM(size), 0) FROM response;
                CREATE TRIGGER total_insert AFTER INSERT ON response BEGIN UPDATE total SET bytes = bytes + NEW.size; END;
                CREATE TRIGGER total_delete AFTER DELETE ON response BEGIN UPDATE total SET bytes = bytes - OLD.size; END;
                CREATE TRIGGER total_update AFTER UPDATE OF size ON response BEGIN UPDATE total SET bytes = bytes - OLD.size + NEW.size; END;
                CREATE INDEX response_size ON response(size);
                """)
        }
        return migrator
    }

    /// What a look-up found in the database.
    private enum LookUp {
        case missing
        case found(head: Data, body: Data)
        /// A row whose columns are not what this store writes.
        case unreadable
    }

    public func cachedResponse(for key: String) async -> CachedResponse? {
        // A read, not a write: a look-up never waits behind a store, and a disk that takes no writes still answers.
        let found = (try? await database.read { db -> LookUp in
            guard let row = try Row.fetchOne(db, sql: "SELECT head, body FROM response WHERE key = ?", arguments: [key]) else {
                return .missing
            }
            // Decoded with a throw, not GRDB's subscripts, which trap on a value of another type.
            guard let head = try? row.decode(Data.self, forColumn: "head"), let body = try? row.decode(Data.self, forColumn: "body") else {
                return .unreadable
            }
            return .found(head: head, body: body)
        }) ?? .missing
        var entry: CachedResponse?
        switch found {
        case .missing: return nil
        case .unreadable: entry = nil
        case .found(let head, let body): entry = (try? JSONDecoder().decode(StoredHead.self, from: head))?.entry(body: body)
        }
        guard let entry else {
            // A row that does not read back: gone, rather than found again at every look-up.
            await removeCachedResponse(for: key)
            return nil
        }
        // Its use is noted in the background; if that write fails, the entry only looks older than it is.
        database.asyncWriteWithoutTransaction { db in
            try? db.execute(sql: "UPDATE response SET lastUse = \(Self.nextUse) WHERE key = ?", arguments: [key])
        }
        return entry
    }

    public func store(_ response: CachedResponse, for key: String) async {
        let size = response.cost
        guard response.data.count <= maximumEntrySize, size <= capacity,
              let head = try? JSONEncoder().encode(StoredHead(response)) else {
            await removeCachedResponse(for: key)
            return
        }
        let capacity = self.capacity
        let written: Void? = try? await database.write { db in
            // An upsert, not `INSERT OR REPLACE`: the row it replaces would leave without firing the delete trigger
            // (SQLite fires none for REPLACE's deletes unless triggers may recurse), and the total would drift.
            try db.execute(sql: """
                INSERT INTO response (key, head, body, size, lastUse) VALUES (?, ?, ?, ?, \(Self.nextUse))
                ON CONFLICT (key) DO UPDATE SET head = excluded.head, body = excluded.body, size = excluded.size, lastUse = excluded.lastUse
                """, arguments: [key, head, response.data, size])
            // Least recently used first, a few at a time, until the rest fit.
            var total = try Self.total(db)
            while total > capacity {
                let oldest = try Row.fetchAll(db, sql: "SELECT key, size FROM response ORDER BY lastUse LIMIT 16")
                guard !oldest.isEmpty else {
                    // Over capacity with nothing left: the total drifted (an older version's `INSERT OR REPLACE` adds
                    // without taking the replaced row away). Counted afresh, cheap on an empty table.
                    try Self.recount(db)
                    break
                }
                for row in oldest {
                    try db.execute(sql: "DELETE FROM response WHERE key = ?", arguments: [row.decode(String.self, forColumn: "key")])
                    total -= try row.decode(Int.self, forColumn: "size")
                    if total <= capacity { break }
                }
            }
        }
        // Rolled back (a full disk): the older entry must not stand for the newer answer.
        if written == nil { await removeCachedResponse(for: key) }
    }

    /// The `lastUse` of an entry stored or read now: one past the latest, a count rather than the clock's time, so
    /// that a clock set back (NTP, a restored VM) does not make each new entry the oldest, evicted as it is stored.
    private static let nextUse = "(SELECT COALESCE(MAX(lastUse), 0) + 1 FROM response)"

    public func removeCachedResponse(for key: String) async {
        _ = try? await database.write { db in
            try db.execute(sql: "DELETE FROM response WHERE key = ?", arguments: [key])
        }
    }

    public func removeAllCachedResponses() async {
        _ = try? await database.write { db in
            try db.execute(sql: "DELETE FROM response")
        }
    }

    /// Bytes the entries take now (0 if the database cannot be read).
    public func currentSize() async -> Int {
        (try? await database.read { db in try Self.total(db) }) ?? 0
    }

    /// The entries' total size, as the triggers keep it.
    private static func total(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT bytes FROM total") ?? 0
    }

    /// Sets the total to the rows' own sum (a scan of the `size` index, not of the rows and their bodies).
    private static func recount(_ db: Database) throws {
        try db.execute(sql: "UPDATE total SET bytes = (SELECT COALESCE(SUM(size), 0) FROM response)")
    }

    /// The number of entries (0 if the database cannot be read).
    public func count() async -> Int {
        (try? await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM response") ?? 0 }) ?? 0
    }
}
