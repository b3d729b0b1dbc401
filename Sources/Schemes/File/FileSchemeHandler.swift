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
///   slice and adds `Content-Range`; a range past the end fails with ``LoadError/Code/resourceUnavailable``.
/// - **HEAD** answers the same head with no body.
/// - **A directory** answers a listing as `text/plain; charset=utf-8`: one entry per line, sorted by
///   name, folders with a trailing `/` (as `ls -p` shows them). This lets a tool browse a tree through one
///   API; a caller that wants files only can check `mimeType`.
/// - **PUT** writes the request body atomically: into a temporary file beside the target, flushed to disk,
///   then renamed over it. On any failure the temporary file is removed and the old target is untouched.
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

    static let readSize = 256 * 1024

    /// Serves the request: GET, HEAD or PUT.
    @concurrent override public func load() async throws {
        let url = request.url
        if let host = url.host(percentEncoded: false), !host.isEmpty, host.lowercased() != "localhost" {
            throw LoadError(.unsupportedURL, url: url, reason: "file: URLs on another host (\(host)) are not supported")
        }
        let path = url.path(percentEncoded: false)
        guard !path.isEmpty else { throw LoadError(.badURL, url: url, reason: "the URL has no path") }
        switch request.method {
        case .get, .head:
            try await read(path: path, url: url)
        case .put:
            try await FileUpload(path: path, url: url, handler: self).run()
        default:
            throw LoadError(.unsupportedURL, url: url, reason: "file: supports GET, HEAD and PUT, not \(request.method.rawValue)")
        }
    }

    private func read(path: String, url: URL) async throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileErrors.reading(errno, path: path, url: url) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileErrors.reading(errno, path: path, url: url) }
        if info.st_mode & S_IFMT == S_IFDIR {
            return try await listDirectory(path: path, url: url)
        }

        let size = Int64(info.st_size)
        var fields = HTTPFields()
        fields[.contentType] = PathContentTypes.type(forPath: path)
        fields[.lastModified] = IMFFixdate.string(fromUnixTime: Int(info.st_mtim.tv_sec))
        fields[.acceptRanges] = "bytes"
        var span: ClosedRange<Int64>? = size > 0 ? 0...(size - 1) : nil
        let isRegular = info.st_mode & S_IFMT == S_IFREG
        if isRegular, let header = request.headerFields[.range], let range = ByteRange(header: header) {
            guard let selected = range.resolve(size: size) else {
                throw LoadError(.resourceUnavailable, url: url, reason: "range not satisfiable: \(header) of a \(size)-byte file")
            }
            span = selected
            fields[.contentRange] = "bytes \(selected.lowerBound)-\(selected.upperBound)/\(size)"
        }
        let length = span.map { $0.upperBound - $0.lowerBound + 1 } ?? 0
        if isRegular { fields[.contentLength] = String(length) }
        client.handler(self, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
        guard request.method != .head else { return }

        if !isRegular {
            // A pipe or device: no size to check, read to its end.
            return try await stream(fd: fd, from: 0, count: nil, path: path, url: url)
        }
        guard let span else { return }
        try await stream(fd: fd, from: span.lowerBound, count: length, path: path, url: url)
    }

    private func stream(fd: Int32, from start: Int64, count: Int64?, path: String, url: URL) async throws {
        var offset = start
        var remaining = count ?? .max
        var buffer = [UInt8](repeating: 0, count: Self.readSize)
        while remaining > 0 {
            try Task.checkCancellation()
            let want = Int(min(Int64(Self.readSize), remaining))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            if got < 0 {
                if errno == EINTR { continue }
                throw FileErrors.reading(errno, path: path, url: url)
            }
            if got == 0 {
                guard let count else { return }
                throw LoadError(.badServerResponse, url: url, reason: "\(path) changed size while being read: got \(offset - start) of \(count) bytes")
            }
            offset += Int64(got)
            remaining -= Int64(got)
            try await client.handler(self, deliver: Data(buffer[0..<got]))
        }
    }

    private func listDirectory(path: String, url: URL) async throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw FileErrors.reading(EACCES, path: path, url: url)
        }
        let base = URL(fileURLWithPath: path, isDirectory: true)
        let lines = names.sorted().map { name -> String in
            var isDirectory = false
            _ = FileManager.default.fileExists(atPath: base.appendingPathComponent(name).path, isDirectory: &isDirectory)
            return isDirectory ? name + "/" : name
        }
        let body = Data(lines.map { $0 + "\n" }.joined().utf8)
        var fields = HTTPFields()
        fields[.contentType] = "text/plain; charset=utf-8"
        fields[.contentLength] = String(body.count)
        client.handler(self, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
        if request.method != .head, !body.isEmpty { try await client.handler(self, deliver: body) }
    }
}
