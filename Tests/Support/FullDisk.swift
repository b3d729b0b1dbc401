import Foundation
import Loader

extension TestServers {
    /// Runs `body` with a folder of its own on a file system of 256 KiB (a tmpfs that `scripts/test-servers`
    /// mounts), where a larger write fails with "No space left on device": a full disk. One such test at a time
    /// (the file system is shared, and one test filling it would fail another's setup); the folder is removed after.
    public static func withFullDisk<T>(_ body: (URL) async throws -> T) async throws -> T {
        guard let path = environment["FULL_DISK"] else {
            throw TestServerError("no full-disk fixture: scripts/test-servers could not mount a 256 KiB tmpfs (it needs root)")
        }
        return try await ExclusiveGate.fullDisk.exclusive {
            removeStaleFolders(in: URL(fileURLWithPath: path))
            // Named with this process's id, so that another process can tell whether its owner still runs.
            let folder = URL(fileURLWithPath: path).appendingPathComponent("test-\(getpid())-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(at: folder) }
            return try await body(folder)
        }
    }
}

/// Removes the test folders in the full-disk fixture `root` whose process is gone: left by a test process that crashed
/// (its `defer` never ran), they would leave every later test a disk already full. A folder is `test-PID-UUID`; one
/// whose process runs is another process's, and stays.
func removeStaleFolders(in root: URL) {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
    for name in names where name.hasPrefix("test-") {
        let owner = name.split(separator: "-").dropFirst().first.flatMap { pid_t($0) }
        // No such process (ESRCH); one of another user's would answer EPERM, and is alive.
        if let owner, owner != getpid(), kill(owner, 0) != 0, errno == ESRCH {
            try? FileManager.default.removeItem(at: root.appendingPathComponent(name))
        }
    }
}

/// The names of the files in `folder`, sorted; none where the folder cannot be read.
public func filesLeft(in folder: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
}

/// What is wrong with `error` as the failure of a write to a full disk, or `nil` when it is right: a
/// `cannotWriteToFile` that names `url` and says "No space left on device".
public func fullDiskFailureProblem(_ error: LoadError?, url: URL) -> String? {
    guard let error else { return "no error: the write to a full disk succeeded" }
    guard error.code == .cannotWriteToFile else { return "\(error.code), not cannotWriteToFile: \(error)" }
    guard error.url == url else { return "the error names \(String(describing: error.url)), not \(url): \(error)" }
    guard error.description.contains("No space left on device") else { return "the cause is not named: \(error)" }
    return nil
}
