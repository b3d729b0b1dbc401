import Foundation
import GRDB

/// Why a disk store (``DiskResponseCache``, ``DiskCookieJar``) could not open its folder.
public struct DiskStoreOpenError: Error, CustomStringConvertible {
    /// The folder.
    public let directory: URL
    /// What went wrong.
    public let underlying: any Error
    /// The folder and the cause.
    public var description: String { "cannot open the store in \(directory.path): \(underlying)" }
}

/// Opens the SQLite database a disk store keeps in a folder of its own.
enum DiskDatabase {
    /// The database `name` in `directory` (both made if missing), brought up to date by `migrator`.
    static func open(_ name: String, in directory: URL, migrator: DatabaseMigrator) throws -> (DatabasePool, URL) {
        let file = directory.appendingPathComponent(name)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var configuration = Configuration()
            // Another process writing at the same moment is waited for, briefly, rather than failed at once.
            configuration.busyMode = .timeout(5)
            configuration.prepareDatabase { db in
                // Freed pages go back to the file system, and the write-ahead log is cut back to 4 MiB after each
                // checkpoint: what was removed stops taking disk space. (auto_vacuum counts only for a new file;
                // both concern the writer, and a reader's connection may not set the first.)
                guard !db.configuration.readonly else { return }
                try db.execute(sql: "PRAGMA auto_vacuum = FULL; PRAGMA journal_size_limit = 4194304")
            }
            let database = try DatabasePool(path: file.path, configuration: configuration)
            do {
                try migrator.migrate(database)
            } catch {
                // Another process opening the same folder may have applied the same migration between GRDB's look at
                // what was applied and its own attempt ("table … already exists"): a second try sees it applied.
                try migrator.migrate(database)
            }
            return (database, file)
        } catch {
            throw DiskStoreOpenError(directory: directory, underlying: error)
        }
    }
}
