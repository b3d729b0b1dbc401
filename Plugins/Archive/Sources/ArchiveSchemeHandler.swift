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
/// Links inside the archive (hard and symbolic) are followed, eight at most; where a name repeats, the first entry
/// of it is served. Errors name the URL: ``LoadError/Code/fileDoesNotExist`` for a missing archive or entry (or a
/// link out of the archive), ``LoadError/Code/noPermissionsToReadFile`` (an encrypted entry too),
/// ``LoadError/Code/fileIsDirectory`` for a folder asked for as a file, and ``LoadError/Code/cannotDecodeContentData``
/// for a file that is not an archive, or one damaged or cut short inside an entry (never a body that ends early
/// without a word; a tar cut exactly between entries reads as a shorter archive). A damaged header (a tar block whose
/// checksum fails) is skipped, as tar skips it, and the entries after it are served; an entry not found after one, and
/// a listing that would miss one, fail as damaged. Only `GET` and `HEAD`; the
/// archive must be a regular local file (a FIFO in its place is refused, not waited on).
public final class ArchiveSchemeHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: no stored state beyond the base class's.

    /// `archive`.
    override public class var supportedSchemes: Set<String> { ["archive"] }
    /// No origin a cache could spare: a local file.
    override public class var reachesOrigin: Bool { false }

    static let readSize = 256 * 1024

    /// The most links (hard or symbolic) followed from the entry asked for to the one served.
    static let linkLimit = 8

    /// Serves the entry or the listing.
    @concurrent override public func load() async throws {
        let url = request.url
        guard request.method == .get || request.method == .head else {
            throw LoadError(.unsupportedURL, url: url, reason: "archive: supports GET and HEAD, not \(request.method.rawValue)")
        }
        let target = try ArchiveURL(url)
        if target.isFolder { return try await list(target, reader: try ArchiveReader(path: target.path, url: url), url: url) }
        var name = target.entry
        // A link is followed by a pass of its own: a tar's hard link names an entry that came before it.
        for _ in 0...Self.linkLimit {
            let reader = try ArchiveReader(path: target.path, url: url)
            switch try await find(name, in: reader, archive: target.path, url: url) {
            case .entry(let entry): return try await stream(entry, reader: reader, url: url)
            case .link(let next): name = next
            }
        }
        throw LoadError(.fileDoesNotExist, url: url, reason: "more than \(Self.linkLimit) links lead on from \(target.entry) in the archive")
    }

    private enum Found {
        case entry(ArchiveReader.Entry)
        /// A link: the entry it leads to.
        case link(String)
    }

    /// The first entry named `name` (the first wins where a name repeats), with the reader at its data.
    private func find(_ name: String, in reader: ArchiveReader, archive: String, url: URL) async throws -> Found {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readSize, alignment: 16)
        defer { buffer.deallocate() }
        var holdsEntries = false
        while let entry = try reader.next() {
            try Task.checkCancellation()
            guard entry.name == name else {
                if let other = entry.name, other.hasPrefix(name + "/") { holdsEntries = true }
                try await skip(entry, reader: reader, buffer: buffer)
                continue
            }
            if let hardLink = entry.hardLink { return .link(hardLink) }
            if let symbolicLink = entry.symbolicLink {
                guard let next = ArchiveURL.linkTarget(symbolicLink, from: name) else {
                    throw LoadError(.fileDoesNotExist, url: url, reason: "\(name) links to \(symbolicLink), outside the archive")
                }
                return .link(next)
            }
            if entry.isFolder {
                throw LoadError(.fileIsDirectory, url: url, reason: "\(name) is a folder of the archive: ask for \(name)/ to list it")
            }
            guard entry.isRegularFile else {
                throw LoadError(.fileDoesNotExist, url: url, reason: "\(name) in the archive is not a regular file (a device or a FIFO)")
            }
            guard !entry.isEncrypted else {
                throw LoadError(.noPermissionsToReadFile, url: url, reason: "\(name) is encrypted in the archive (no passphrase is taken)")
            }
            return .entry(entry)
        }
        // A zip often has no entries for its folders: one only implied by the names under it is a folder too.
        if holdsEntries {
            throw LoadError(.fileIsDirectory, url: url, reason: "\(name) is a folder of the archive: ask for \(name)/ to list it")
        }
        if let damage = reader.skippedDamage {
            // It may have been the damaged one.
            throw LoadError(.cannotDecodeContentData, url: url, reason: "the archive \(archive) has no entry \(name) that can be read: a damaged header was skipped (\(damage))")
        }
        throw LoadError(.fileDoesNotExist, url: url, reason: "the archive \(archive) has no entry \(name)")
    }

    /// Passes over an entry's data in chunks, noticing cancellation between them, where libarchive would otherwise
    /// decompress it all inside the next header's call; a zip's entries are skipped by seeking, and small ones
    /// are left to libarchive.
    private func skip(_ entry: ArchiveReader.Entry, reader: ArchiveReader, buffer: UnsafeMutableRawBufferPointer) async throws {
        guard !reader.skipsBySeeking, entry.size.map({ $0 > 1 << 20 }) ?? true else { return }
        var chunks = 0
        while try reader.read(into: buffer) > 0 {
            chunks += 1
            if chunks % 8 == 0 {
                try Task.checkCancellation()
                await Task.yield()
            }
        }
    }

    private func stream(_ entry: ArchiveReader.Entry, reader: ArchiveReader, url: URL) async throws {
        var fields = HTTPFields()
        fields[.contentType] = PathContentTypes.type(forPath: entry.name ?? "")
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
            throw LoadError(.cannotDecodeContentData, url: url, reason: "the entry \(entry.name ?? "") ended after \(received) of \(size) bytes")
        }
    }

    private func list(_ target: ArchiveURL, reader: ArchiveReader, url: URL) async throws {
        let prefix = target.entry.isEmpty ? "" : target.entry + "/"
        var names = Set<String>()
        var found = target.entry.isEmpty
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readSize, alignment: 16)
        defer { buffer.deallocate() }
        while let entry = try reader.next() {
            try Task.checkCancellation()
            try await skip(entry, reader: reader, buffer: buffer)
            // A name with `..` names nothing inside the archive: left out.
            guard let name = entry.name else { continue }
            if name == target.entry, entry.isFolder { found = true }
            guard name.hasPrefix(prefix), name.count > prefix.count else { continue }
            found = true
            let rest = name.dropFirst(prefix.count)
            // The first part below the folder: a folder of its own when more follows or the entry is one.
            if let slash = rest.firstIndex(of: "/") {
                names.insert(String(rest[..<slash]) + "/")
            } else {
                names.insert(String(rest) + (entry.isFolder ? "/" : ""))
            }
        }
        if let damage = reader.skippedDamage {
            // A listing without the damaged entry would look whole.
            throw LoadError(.cannotDecodeContentData, url: url, reason: "the archive \(target.path) has a damaged header (\(damage)): its listing would miss an entry")
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
