import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Loader

/// The `file:` handler: local files, read as the reader takes them.
///
/// - **GET** streams the file in 256 KiB reads with backpressure, so a file larger than memory loads in
///   bounded memory. The response has `Content-Type` (from the extension), `Content-Length`,
///   `Last-Modified` and `Accept-Ranges: bytes`. A `Range: bytes=a-b` (or `a-`, `-n`) header selects a
///   slice and adds `Content-Range`; a range past the end fails with ``LoadError/Code/resourceUnavailable``
///   (its underlying error a ``Loader/RangeNotSatisfiable``).
/// - **HEAD** answers the same head with no body.
/// - **A directory** answers a listing as `text/plain`: one entry per line, the names' bytes as the folder
///   holds them (no charset is claimed: a name need not be UTF-8), in byte order, folders and links to folders
///   with a trailing `/`. This lets a tool browse a tree through one API; a caller that wants files only can
///   check `mimeType`.
/// - **PUT** writes the request body atomically: into a temporary file beside the target, flushed to disk,
///   then renamed over it. On any failure the temporary file is removed and the old target is untouched.
///
/// The URL's path is percent-decoded to the bytes the system takes: a name that is not UTF-8 (`caf%E9`, Latin-1 from
/// an old system) is read as it is named, as curl reads it (an upload's path must be UTF-8; a `%00` is a bad URL).
///
/// - **A pipe, a device, or a file of /proc or /sys** (whose size says nothing of its contents) is read to
///   its end with no `Content-Length`. A FIFO with no writer yet is waited for, in steps that notice
///   cancellation and timeouts.
///
/// Errors name the URL and the path: ``LoadError/Code/fileDoesNotExist``,
/// ``LoadError/Code/noPermissionsToReadFile``, ``LoadError/Code/fileIsDirectory`` (PUT onto a folder),
/// ``LoadError/Code/cannotCreateFile`` and ``LoadError/Code/cannotWriteToFile``. A file that shrinks while
/// it is read fails with ``LoadError/Code/badServerResponse`` rather than ending short.
///
/// Reads are blocking `pread` calls of 256 KiB; on a local disk each returns in microseconds, which is why
/// they run on the task itself instead of a thread of their own.
public final class FileSchemeHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: no stored state beyond the base class's.

    /// `file`.
    override public class var supportedSchemes: Set<String> { ["file"] }
    /// No origin a cache could spare: loads go ahead under ``CachePolicy/returnCacheDataDontLoad``.
    override public class var reachesOrigin: Bool { false }

    static let readSize = 256 * 1024

    /// Serves the request: GET, HEAD or PUT.
    @concurrent override public func load() async throws {
        let url = request.url
        if let host = url.host(percentEncoded: false), !host.isEmpty, host.lowercased() != "localhost" {
            throw LoadError(.unsupportedURL, url: url, reason: "file: URLs on another host (\(host)) are not supported")
        }
        let bytes = try Self.localPath(of: url)
        // For messages and the type by extension; the system calls of a read take the bytes themselves.
        let path = String(decoding: bytes, as: UTF8.self)
        switch request.method {
        case .get, .head:
            try await read(path: path, bytes: bytes, url: url)
        case .put:
            guard let exact = String(validating: bytes, as: UTF8.self) else {
                throw LoadError(.badURL, url: url, reason: "the path's escapes do not decode to UTF-8, which an upload's path must (\(url.path(percentEncoded: true)))")
            }
            try await FileUpload(path: exact, url: url, handler: self).run()
        default:
            throw LoadError(.unsupportedURL, url: url, reason: "file: supports GET, HEAD and PUT, not \(request.method.rawValue)")
        }
    }

    /// The URL's path, percent-decoded to the bytes the system takes, which need not be UTF-8 (a Latin-1 name from
    /// an old system, `caf%E9`, is read as curl reads it); a NUL, which would cut the path short at the system
    /// call, is a bad URL rather than another file.
    static func localPath(of url: URL) throws(LoadError) -> [UInt8] {
        let encoded = url.path(percentEncoded: true)
        guard !encoded.isEmpty else { throw LoadError(.badURL, url: url, reason: "the URL has no path") }
        var contiguous = encoded
        let bytes = contiguous.withUTF8 { PercentDecoding.decode($0) }
        guard !bytes.contains(0) else { throw LoadError(.badURL, url: url, reason: "the path holds a NUL byte (%00)") }
        return Array(bytes)
    }

    /// `path` for messages; `bytes` (no NUL), the path as the system takes it.
    private func read(path: String, bytes: [UInt8], url: URL) async throws {
        // Non-blocking, so that opening a FIFO with no writer does not wait where nothing can stop it.
        let fd = CPath.with(bytes) { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { throw FileErrors.reading(errno, path: path, url: url) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileErrors.reading(errno, path: path, url: url) }
        if info.st_mode & S_IFMT == S_IFDIR {
            return try await listDirectory(path: path, bytes: bytes, url: url)
        }

        let size = Int64(info.st_size)
        var fields = HTTPFields()
        fields[.contentType] = PathContentTypes.type(forPath: path)
        fields[.lastModified] = IMFFixdate.string(fromUnixTime: Int(info.st_mtim.tv_sec))
        var span: ClosedRange<Int64>? = size > 0 ? 0...(size - 1) : nil
        // A file of /proc or /sys has a size (0 or a page) unrelated to what it holds: read it as a stream.
        var isRegular = FileSize.readable(info, path: path) != nil
        // So may a file of a pseudo file system not known here (binfmt_misc, nfsd, FUSE) that says 0 bytes: one read
        // tells it from an empty file, as curl reads such a file to its end.
        if isRegular, size == 0, request.method != .head {
            isRegular = try !holdsAByte(fd: fd, path: path, url: url)
        }
        // Only a file of known size can give a range; a pipe or a pseudo file is read whole, whatever is asked.
        if isRegular { fields[.acceptRanges] = "bytes" }
        if isRegular, let header = request.headerFields[.range], let range = ByteRange(header: header) {
            guard let selected = range.resolve(size: size) else {
                throw LoadError(.resourceUnavailable, url: url, reason: "range not satisfiable: \(header) of a \(size)-byte file",
                                underlying: RangeNotSatisfiable(size: size))
            }
            span = selected
            fields[.contentRange] = "bytes \(selected.lowerBound)-\(selected.upperBound)/\(size)"
        }
        let length = span.map { $0.upperBound - $0.lowerBound + 1 } ?? 0
        if isRegular { fields[.contentLength] = String(length) }
        client.handler(self, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
        guard request.method != .head else { return }

        if !isRegular {
            // A pipe, device or pseudo file: no size to check, no offset to read at; read to its end.
            return try await streamToEnd(fd: fd, path: path, url: url)
        }
        guard let span else { return }
        try await stream(fd: fd, from: span.lowerBound, count: length, path: path, url: url)
    }

    private func stream(fd: Int32, from start: Int64, count: Int64?, path: String, url: URL) async throws {
        var offset = start
        var remaining = count ?? .max
        while remaining > 0 {
            try Task.checkCancellation()
            let want = Int(min(Int64(Self.readSize), remaining))
            // Read straight into the chunk handed on, not into a buffer copied from: the copy was as dear as the read.
            guard let chunk = malloc(want) else { throw LoadError(.unknown, url: url, reason: "no memory for a read of \(want) bytes") }
            let got = pread(fd, chunk, want, off_t(offset))
            if got <= 0 {
                let code = errno
                free(chunk)
                if got < 0 {
                    if code == EINTR { continue }
                    throw FileErrors.reading(code, path: path, url: url)
                }
                guard let count else { return }
                throw LoadError(.badServerResponse, url: url, reason: "\(path) changed size while being read: got \(offset - start) of \(count) bytes")
            }
            offset += Int64(got)
            remaining -= Int64(got)
            try await client.handler(self, deliver: Data(bytesNoCopy: chunk, count: got, deallocator: .free))
        }
    }

    /// Whether the file holds a byte at its start, though its size says 0 (`pread`: the offset stays where it was).
    private func holdsAByte(fd: Int32, path: String, url: URL) throws -> Bool {
        var byte: UInt8 = 0
        while true {
            let got = pread(fd, &byte, 1, 0)
            if got >= 0 { return got == 1 }
            guard errno == EINTR else { throw FileErrors.reading(errno, path: path, url: url) }
        }
    }

    /// Reads a descriptor that may not seek or may have nothing yet (a pipe, a FIFO without a writer). While
    /// it has nothing, the task sleeps (1 ms, doubling to ``longestWait``) rather than blocking its thread in
    /// the kernel: the load may have started on its caller's thread, and cancellation and timeouts need
    /// threads of the pool to run.
    private func streamToEnd(fd: Int32, path: String, url: URL) async throws {
        var buffer = [UInt8](repeating: 0, count: Self.readSize)
        var wait = Duration.milliseconds(1)
        while true {
            try Task.checkCancellation()
            let got = buffer.withUnsafeMutableBytes { readBytes(fd, $0.baseAddress, Self.readSize) }
            if got > 0 {
                wait = .milliseconds(1)
                try await client.handler(self, deliver: Data(buffer[0..<got]))
                continue
            }
            if got == 0 {
                // The end, unless a FIFO has had no writer yet (then poll reports no hang-up): wait for one.
                guard Self.isFIFOWithoutWriter(fd) else { return }
            } else if errno == EINTR {
                continue
            } else if errno != EAGAIN {
                throw FileErrors.reading(errno, path: path, url: url)
            }
            try await Task.sleep(for: wait)
            wait = min(wait * 2, Self.longestWait)
        }
    }

    /// The longest sleep between two looks at a pipe that has nothing.
    static let longestWait = Duration.milliseconds(50)

    /// Whether `fd` is a FIFO no writer has opened yet: `read` gives 0 then as at the end, but a FIFO whose
    /// writer has come and gone reports a hang-up.
    private static func isFIFOWithoutWriter(_ fd: Int32) -> Bool {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return false }
        var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&probe, 1, 0) == 0
    }

    private func listDirectory(path: String, bytes: [UInt8], url: URL) async throws {
        let body: Data
        do {
            body = try DirectoryListing.body(ofFolderAt: bytes)
        } catch {
            throw FileErrors.reading(error.code, path: path, url: url)
        }
        var fields = HTTPFields()
        fields[.contentType] = "text/plain"
        fields[.contentLength] = String(body.count)
        client.handler(self, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
        if request.method != .head, !body.isEmpty { try await client.handler(self, deliver: body) }
    }
}

/// The C library's `read`, which the handler's own `read(path:url:)` hides inside the class.
private func readBytes(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
