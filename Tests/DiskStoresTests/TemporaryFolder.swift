import Foundation

/// A folder path of its own under the temporary directory (not made), for one store.
func temporaryFolder(_ prefix: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
}
