import FoundationEssentials
import HTTPTypes
import Loader

/// The `archive:` handler, a plugin (not among the standard schemes): one entry of a local archive, read with
/// libarchive as the reader takes it, or a listing of one of its folders.
///
/// ```swift
/// import ArchiveScheme
/// SchemeRegistry.default.register(ArchiveSchemeHandler.self)
/// let (data, _) = try await session.data(from: URL(string: "archive:file:///srv/site.zip!/docs/index.html")!)
/// ```
///
/// The URL is the archive's `file:` URL, `!/`, and the entry's path (percent-encoded as a URL path is). Any format
/// and compression libarchive reads will do: zip, tar (plain, gzip, bzip2, xz, zstd), 7z, cpio, ISO 9660 and more.
/// - **An entry** streams in 256 KiB chunks with backpressure; the response has `Content-Type` from the entry's
///   extension, `Content-Length` when the archive records the size, and `Last-Modified`. `HEAD` gives the head.
/// - **A folder** (`!/` or a path ending in `/`) answers a listing as `text/plain; charset=utf-8`: its entries,
///   one per line, sorted, folders with a trailing `/` (folders only implied by deeper entries included), as the
///   `file:` handler lists a directory.
///
/// Errors name the URL: ``LoadError/Code/fileDoesNotExist`` for a missing archive or entry,
/// ``LoadError/Code/noPermissionsToReadFile``, ``LoadError/Code/fileIsDirectory`` for a folder entry asked for as
/// a file, and ``LoadError/Code/cannotDecodeContentData`` for a file that is not an archive or is damaged or cut
/// short (never a body that ends early without a word). Only `GET` and `HEAD`; the archive must be local.
public final class ArchiveSchemeHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: no stored state beyond the base class's.

    /// `archive`.
    override public class var supportedSchemes: Set<String> { ["archive"] }
    /// No origin a cache could spare: a local file.
    override public class var reachesOrigin: Bool { false }

    static let readSize = 256 * 1024

    /// Serves the entry or the listing.
    @concurrent override public func load() async throws {
        let url = request.url
        guard request.method == .get || request.method == .head else {
            throw LoadError(.unsupportedURL, url: url, reason: "archive: supports GET and HEAD, not \(request.method.rawValue)")
        }
        let target = try ArchiveURL(url)
        let reader = try ArchiveReader(path: target.path, url: url)
        if target.isFolder { return try await list(target, reader: reader, url: url) }
        while let entry = try reader.next() {
            try Task.checkCancellation()
            guard entry.name == target.entry else { continue }
            if entry.isFolder {
                throw LoadError(.fileIsDirectory, url: url, reason: "\(target.entry) is a folder of the archive: ask for \(target.entry)/ to list it")
            }
            guard entry.isRegularFile else {
                throw LoadError(.fileDoesNotExist, url: url, reason: "\(target.entry) in the archive is not a regular file (a link or a device)")
            }
            return try await stream(entry, reader: reader, url: url)
        }
        throw LoadError(.fileDoesNotExist, url: url, reason: "the archive \(target.path) has no entry \(target.entry)")
    }

    private func stream(_ entry: ArchiveReader.Entry, reader: ArchiveReader, url: URL) async throws {
        var fields = HTTPFields()
        fields[.contentType] = PathContentTypes.type(forPath: entry.name)
        if let size = entry.size { fields[.contentLength] = String(size) }
        if let modified = entry.modified, let date = IMFFixdate.string(fromUnixTime: modified) { fields[.lastModified] = date }
        client.handler(self, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
        guard request.method != .head else { return }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readSize, alignment: 16)
        defer { buffer.deallocate() }
        var received: Int64 = 0
        while true {
            let got = try reader.read(into: buffer)
            if got == 0 { break }
            received += Int64(got)
            try await client.handler(self, deliver: Data(buffer[0..<got]))
        }
        // libarchive ends an entry at its recorded size; a shorter one means the archive lied about it.
        if let size = entry.size, received != size {
            throw LoadError(.cannotDecodeContentData, url: url, reason: "the entry \(entry.name) ended after \(received) of \(size) bytes")
        }
    }

    private func list(_ target: ArchiveURL, reader: ArchiveReader, url: URL) async throws {
        let prefix = target.entry.isEmpty ? "" : target.entry + "/"
        var names = Set<String>()
        var found = target.entry.isEmpty
        while let entry = try reader.next() {
            try Task.checkCancellation()
            if entry.name == target.entry, entry.isFolder { found = true }
            guard entry.name.hasPrefix(prefix), entry.name.count > prefix.count else { continue }
            found = true
            let rest = entry.name.dropFirst(prefix.count)
            // The first part below the folder: a folder of its own when more follows or the entry is one.
            if let slash = rest.firstIndex(of: "/") {
                names.insert(String(rest[..<slash]) + "/")
            } else {
                names.insert(String(rest) + (entry.isFolder ? "/" : ""))
            }
        }
        guard found else {
            throw LoadError(.fileDoesNotExist, url: url, reason: "the archive \(target.path) has no folder \(target.entry)")
        }
        let body = Data(names.sorted().map { $0 + "\n" }.joined().utf8)
        var fields = HTTPFields()
        fields[.contentType] = "text/plain; charset=utf-8"
        fields[.contentLength] = String(body.count)
        client.handler(self, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
        if request.method != .head, !body.isEmpty { try await client.handler(self, deliver: body) }
    }
}
