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

    /// The listing of the folder at `path` (its bytes, without a NUL).
    static func body(ofFolderAt path: [UInt8]) throws(Failure) -> Data {
        guard let folder = CPath.with(path, { opendir($0) }) else { throw Failure(code: errno) }
        defer { closedir(folder) }
        var entries: [(name: [UInt8], isFolder: Bool)] = []
        while true {
            errno = 0
            guard let entry = readdir(folder) else {
                if errno != 0 { throw Failure(code: errno) }
                break
            }
            // From the entry itself, to its NUL: a copy of `d_name` would hold 256 bytes, and some file systems
            // (CIFS, FUSE) give longer names, which the C library leaves in place past them.
            let namePointer = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self)
            let name = Array(UnsafeRawBufferPointer(start: namePointer, count: strlen(namePointer)))
            if name == Array(".".utf8) || name == Array("..".utf8) { continue }
            entries.append((name, isFolder(entry, named: namePointer, in: folder)))
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

    /// Where `d_name` starts in a `dirent`.
    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// Whether `entry` (called `name`) is a folder, or a link that leads to one (followed: a reader can open it as
    /// a folder).
    private static func isFolder(_ entry: UnsafeMutablePointer<dirent>, named name: UnsafePointer<CChar>, in folder: OpaquePointer) -> Bool {
        if entry.pointee.d_type == UInt8(DT_DIR) { return true }
        guard entry.pointee.d_type == UInt8(DT_LNK) || entry.pointee.d_type == UInt8(DT_UNKNOWN) else { return false }
        var info = stat()
        return fstatat(dirfd(folder), name, &info, 0) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
