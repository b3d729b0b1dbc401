import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file's identity and change time, as a key's part: a setting that names a file (a client certificate) is read
/// again once the file changed. The inode and the status-change time catch a renewal that a copy keeping the
/// modification time (`cp -p`, `rsync -a`) and the size (a certificate of the same key type) would hide.
package struct FileStamp: Hashable, Sendable {
    var inode: UInt64
    var changedSeconds: Int
    var changedNanoseconds: Int

    /// The stamp of the file at `path` now, through any symbolic link (a certificate renewed by replacing the file a
    /// link points to, as Kubernetes secrets and certbot's `live/` do, is a change); a file that cannot be read has
    /// an empty one.
    package init(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            (inode, changedSeconds, changedNanoseconds) = (0, -1, 0)
            return
        }
        inode = UInt64(info.st_ino)
        #if canImport(Darwin)
        (changedSeconds, changedNanoseconds) = (Int(info.st_ctimespec.tv_sec), Int(info.st_ctimespec.tv_nsec))
        #else
        (changedSeconds, changedNanoseconds) = (Int(info.st_ctim.tv_sec), Int(info.st_ctim.tv_nsec))
        #endif
    }

    /// The stamps of the files named, in order; a `nil` path (a setting not set) has none.
    package static func of(_ paths: String?...) -> [FileStamp] {
        paths.compactMap { $0 }.map(FileStamp.init)
    }
}
