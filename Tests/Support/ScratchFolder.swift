import Foundation

/// A new folder of its own under the system's temporary folder, named `prefix` and a UUID, for a test's files; the
/// test removes it when done.
public func scratchFolder(_ prefix: String) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}
