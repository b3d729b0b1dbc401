import FoundationEssentials

/// A file's modification time and size, as a key's part: a setting that names a file (a client certificate) is
/// read again once the file changed in place.
package struct FileStamp: Hashable, Sendable {
    var modified: Date?
    var size: Int?

    /// The stamp of the file at `path` now; a file that cannot be read has an empty one.
    package init(_ path: String) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        modified = attributes?[.modificationDate] as? Date
        size = (attributes?[.size] as? Int) ?? (attributes?[.size] as? UInt64).map { Int(clamping: $0) }
    }
}
