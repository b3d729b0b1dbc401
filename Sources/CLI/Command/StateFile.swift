import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader
import SystemPackage

/// A file `loadurl` writes when its transfers end, with what they learnt (the cookie jar of `-c`, the HSTS cache of
/// `--hsts`): whole or not at all, so that a failure leaves the old file as it was.
enum StateFile {
    /// Writes `text` to `path` (`-`: standard output, when `dashIsStandardOutput`); `what` names the file's contents in
    /// the error, a ``LoadError`` that names the file and the cause.
    static func write(_ text: String, to path: String, what: String, dashIsStandardOutput: Bool = true) throws(LoadError) {
        if path == "-", dashIsStandardOutput {
            StandardStreams.output(text)
            return
        }
        let file = URL(fileURLWithPath: path)
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            // Not a regular file (`/dev/null`, a pipe): written in place, as curl does; a rename would replace it.
            do {
                let descriptor = try FileDescriptor.open(FilePath(path), .writeOnly)
                try descriptor.closeAfter { _ = try descriptor.writeAll(text.utf8) }
            } catch {
                throw LoadError(.cannotWriteToFile, url: file, reason: "cannot save \(what) to \(path): \(error)", underlying: error)
            }
            return
        }
        // A new file of an unguessable name, made here and nowhere else (exclusive, no link followed), then
        // renamed over the old: a link planted beside it cannot redirect the write.
        let temporary = FilePath(path + ".loadurl-" + UUID().uuidString)
        var created = false
        do {
            // Owner-only, as a cookie jar holds session tokens.
            let descriptor = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .exclusiveCreate, .noFollow],
                                                     permissions: .ownerReadWrite)
            created = true
            try descriptor.closeAfter { _ = try descriptor.writeAll(text.utf8) }
            guard rename(temporary.string, path) == 0 else { throw Errno(rawValue: errno) }
        } catch {
            if created { _ = unlink(temporary.string) }
            throw LoadError(.cannotWriteToFile, url: file, reason: "cannot save \(what) to \(path): \(error)", underlying: error)
        }
    }
}
