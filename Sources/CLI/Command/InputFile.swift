import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import SystemPackage

/// The files the command line names to read whole (`-d @FILE`, `--data-binary @FILE`, `--data-urlencode @FILE`,
/// `--json @FILE`, `-H @FILE`, `-F name=<FILE`, `-w @FILE`, `-b FILE`, `-K FILE`, a WebSocket's message; `-` for
/// standard input).
///
/// Read with `read(2)` to their end, not by the size `stat` gives, which is 0 for a pipe: with Foundation's
/// whole-file read, `echo a=1 | loadurl -d @- URL` and `loadurl -d @<(cmd) URL` failed. Standard input and any
/// file that is not a regular one (a pipe, a FIFO, a device) can be read only once, so each is read once for the
/// whole run, known by its device and inode (`-` and `/dev/stdin` are one), and every option and URL that names it
/// gets the same bytes (where curl gives a second option reading standard input nothing). A regular file is read
/// at each call.
enum InputFile {
    /// A file that could not be read: which, and the system's reason.
    struct Unreadable: Error, CustomStringConvertible {
        /// The path as given (`-` for standard input).
        let path: String
        /// What `open` or `read` said.
        let cause: Errno

        /// The file and the reason, as error messages name them.
        var description: String { "cannot read \(path == "-" ? "standard input" : path): \(cause)" }
    }

    /// A file that can be read only once, by its device and inode.
    private struct Identity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// What each read-once file gave. Held while such a file is read: another caller of the same pipe waits for its
    /// bytes (regular files are read without it).
    private static let readOnce = Mutex<[Identity: Result<Data, Unreadable>]>([:])

    /// The whole contents of the file at `path` (`-` or `/dev/stdin`: standard input), of at most `maximumSize` bytes
    /// when given (more fails, as `EFBIG`). `consuming` leaves a read-once file empty for every later reader, as a
    /// `-K -` does standard input, whose options must not become another option's bytes.
    static func contents(of path: String, maximumSize: Int? = nil, consuming: Bool = false) throws(Unreadable) -> Data {
        let path = path == "/dev/stdin" ? "-" : path
        var info = stat()
        let known = path == "-" ? fstat(STDIN_FILENO, &info) == 0 : stat(path, &info) == 0
        // A regular file (not standard input, whose offset moves), or one that is not there: read as it is now.
        guard known, path == "-" || info.st_mode & S_IFMT != S_IFREG else { return try read(path, maximumSize: maximumSize) }
        let identity = Identity(device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino))
        return try readOnce.withLock { memo throws(Unreadable) -> Data in
            if let earlier = memo[identity] { return try earlier.get() }
            let result = Result { () throws(Unreadable) in try read(path, maximumSize: maximumSize) }
            memo[identity] = consuming ? result.map { _ in Data() } : result
            return try result.get()
        }
    }

    /// Whether `path` (`-`: standard input) is a regular file this process may read: one that each use can read from
    /// its start as it is sent, rather than read whole once.
    static func isReadableRegularFile(_ path: String) -> Bool {
        var info = stat()
        if path == "-" { return fstat(STDIN_FILENO, &info) == 0 && info.st_mode & S_IFMT == S_IFREG }
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, R_OK) == 0
    }

    /// Reads `path` to its end, or fails past `maximumSize` bytes.
    private static func read(_ path: String, maximumSize: Int?) throws(Unreadable) -> Data {
        do {
            let descriptor = path == "-" ? FileDescriptor.standardInput : try FileDescriptor.open(FilePath(path), .readOnly, options: .closeOnExec)
            // Standard input is the process's, left open.
            defer { if path != "-" { try? descriptor.close() } }
            var info = stat()
            var bytes = Data()
            if fstat(descriptor.rawValue, &info) == 0, info.st_mode & S_IFMT == S_IFREG { bytes.reserveCapacity(Int(info.st_size)) }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = try chunk.withUnsafeMutableBytes { try descriptor.read(into: $0) }
                if count == 0 { break }
                bytes.append(contentsOf: chunk[..<count])
                if let maximumSize, bytes.count > maximumSize { throw Errno.fileTooLarge }
            }
            return bytes
        } catch {
            throw Unreadable(path: path, cause: error as? Errno ?? .ioError)
        }
    }
}
