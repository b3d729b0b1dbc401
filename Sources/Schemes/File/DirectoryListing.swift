import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder's entries as the body of its `file:` URL: one name per line, in byte order, a folder's (or a link to
/// one) followed by a slash. Names are the bytes the folder holds, not decoded: a name that is not UTF-8 (Latin-1
/// from an old system) comes out as it is, as curl lists it, not with its bytes replaced.
enum DirectoryListing {
    /// What stopped a listing: the `errno` of `opendir` or `readdir`.
    struct Failure: Error {
        let code: Int32
    }

    /// The listing of the folder at `path`.
    static func body(ofFolderAt path: String) throws(Failure) -> Data {
        guard let folder = opendir(path) else { throw Failure(code: errno) }
        defer { closedir(folder) }
        var entries: [(name: [UInt8], isFolder: Bool)] = []
        while true {
            errno = 0
            guard let entry = readdir(folder) else {
                if errno != 0 { throw Failure(code: errno) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name == Array(".".utf8) || name == Array("..".utf8) { continue }
            entries.append((name, isFolder(entry, in: folder)))
        }
        entries.sort { $0.name.lexicographicallyPrecedes($1.name) }
        var body = Data()
        for entry in entries {
            body.append(contentsOf: entry.name)
            if entry.isFolder { body.append(UInt8(ascii: "/")) }
            body.append(UInt8(ascii: "\n"))
        }
        return body
    }

    /// Whether `entry` is a folder, or a link that leads to one (followed, as `ls -F` would not, but a reader
    /// can open it as a folder).
    private static func isFolder(_ entry: UnsafeMutablePointer<dirent>, in folder: OpaquePointer) -> Bool {
        if entry.pointee.d_type == UInt8(DT_DIR) { return true }
        guard entry.pointee.d_type == UInt8(DT_LNK) || entry.pointee.d_type == UInt8(DT_UNKNOWN) else { return false }
        var info = stat()
        let found = withUnsafePointer(to: entry.pointee.d_name) { name in
            name.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                fstatat(dirfd(folder), $0, &info, 0) == 0
            }
        }
        return found && info.st_mode & S_IFMT == S_IFDIR
    }
}
