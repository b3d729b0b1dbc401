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
/// `-F name=<FILE`, `-w @FILE`, `-b FILE`, a WebSocket's message; `-` for standard input).
///
/// Read with `read(2)` to their end, not by the size `stat` gives, which is 0 for a pipe: with Foundation's
/// whole-file read, `echo a=1 | loadurl -d @- URL` and `loadurl -d @<(cmd) URL` failed. Standard input and any
/// file that is not a regular one (a pipe, a FIFO, a device) can be read only once, so each is read once for
/// the whole run and every option and URL that names it gets the same bytes, as curl's options do. A regular
/// file is read at each call.
enum InputFile {
    /// A file that could not be read: which, and the system's reason.
    struct Unreadable: Error, CustomStringConvertible {
        /// The path as given (`-` for standard input).
        let path: String
        /// What `open` or `read` said.
        let cause: Errno

        var description: String { "cannot read \(path == "-" ? "standard input" : path): \(cause)" }
    }

    /// What each read-once file gave. Held while a file is read: another caller of the same pipe waits for its bytes.
    private static let readOnce = Mutex<[String: Result<Data, Unreadable>]>([:])

    /// The whole contents of the file at `path` (`-`: standard input).
    static func contents(of path: String) throws(Unreadable) -> Data {
        try readOnce.withLock { known throws(Unreadable) -> Data in
            if let earlier = known[path] { return try earlier.get() }
            let result = Result { () throws(Unreadable) in try read(path) }
            switch result {
            case .success(let read) where read.isRegularFile && path != "-": return read.bytes
            default:
                let kept = result.map(\.bytes)
                known[path] = kept
                return try kept.get()
            }
        }
    }

    /// Whether `path` (`-`: standard input) is a regular file this process may read: one that each use can read from
    /// its start as it is sent, rather than read whole once.
    static func isReadableRegularFile(_ path: String) -> Bool {
        var info = stat()
        if path == "-" { return fstat(STDIN_FILENO, &info) == 0 && info.st_mode & S_IFMT == S_IFREG }
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, R_OK) == 0
    }

    /// Reads `path` to its end.
    private static func read(_ path: String) throws(Unreadable) -> (bytes: Data, isRegularFile: Bool) {
        do {
            let descriptor = path == "-" ? FileDescriptor.standardInput : try FileDescriptor.open(FilePath(path), .readOnly, options: .closeOnExec)
            // Standard input is the process's, left open.
            defer { if path != "-" { try? descriptor.close() } }
            var info = stat()
            let isRegularFile = fstat(descriptor.rawValue, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
            var bytes = Data()
            if isRegularFile { bytes.reserveCapacity(Int(info.st_size)) }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = try chunk.withUnsafeMutableBytes { try descriptor.read(into: $0) }
                if count == 0 { break }
                bytes.append(contentsOf: chunk[..<count])
            }
            return (bytes, isRegularFile)
        } catch {
            throw Unreadable(path: path, cause: error as? Errno ?? .ioError)
        }
    }
}
