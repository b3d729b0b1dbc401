import CArchive
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Loader

/// One pass over an archive with libarchive (any format and compression it reads: zip, tar with gzip, bzip2,
/// xz or zstd, 7z, cpio, ISO …): entry headers in order, and the data of the current entry in chunks. Blocking
/// reads, as `file:`'s are; one reader per load, freed when it goes.
final class ArchiveReader {
    /// What an entry's header says.
    struct Entry {
        /// The name, normalized (``ArchiveURL/normalized(_:)``).
        var name: String
        var isFolder: Bool
        var isRegularFile: Bool
        /// The size, when the header gives it.
        var size: Int64?
        /// Seconds since 1970, when the header gives it.
        var modified: Int?
    }

    private let archive: OpaquePointer
    private let url: URL
    private let path: String

    /// A UTF-8 `LC_CTYPE` for libarchive's calls: it converts entry names to the current locale's charset, and in
    /// the C locale a process starts in, a name outside ASCII does not convert (the entry comes back nameless).
    /// Set for the calling thread alone (`uselocale`), around each call, never for the process.
    // nonisolated(unsafe): a locale object made once and never changed; `uselocale` only reads it.
    nonisolated(unsafe) private static let utf8Locale: locale_t? = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil)

    private static func inUTF8<T>(_ body: () throws(LoadError) -> T) throws(LoadError) -> T {
        guard let utf8Locale else { return try body() }
        let previous = uselocale(utf8Locale)
        defer { uselocale(previous) }
        return try body()
    }

    /// Opens the archive at `path`; errors name `url` and say why (no such file, no permission, not an archive).
    init(path: String, url: URL) throws(LoadError) {
        guard let archive = archive_read_new() else { throw LoadError(.unknown, url: url, reason: "libarchive could not start a reader") }
        self.archive = archive
        self.url = url
        self.path = path
        archive_read_support_filter_all(archive)
        archive_read_support_format_all(archive)
        let opened = try Self.inUTF8 { archive_read_open_filename(archive, path, 256 * 1024) }
        guard opened == ARCHIVE_OK else { throw failure("cannot open") }
    }

    deinit {
        archive_read_free(archive)
    }

    /// The next entry's header, or `nil` after the last.
    func next() throws(LoadError) -> Entry? {
        try Self.inUTF8 { () throws(LoadError) -> Entry? in try nextHeader() }
    }

    private func nextHeader() throws(LoadError) -> Entry? {
        var header: OpaquePointer?
        let status = archive_read_next_header(archive, &header)
        if status == ARCHIVE_EOF { return nil }
        // A warning (an unknown extended attribute, a truncated name) still gives a usable header.
        guard status == ARCHIVE_OK || status == ARCHIVE_WARN, let header else { throw failure("cannot read an entry of") }
        let raw = archive_entry_pathname_utf8(header) ?? archive_entry_pathname(header)
        let name = raw.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) } ?? ""
        let type = archive_entry_filetype(header)
        return Entry(name: ArchiveURL.normalized(name), isFolder: type == CArchiveTypeFolder || name.hasSuffix("/"),
                     isRegularFile: type == CArchiveTypeRegular,
                     size: archive_entry_size_is_set(header) != 0 ? archive_entry_size(header) : nil,
                     modified: archive_entry_mtime_is_set(header) != 0 ? Int(archive_entry_mtime(header)) : nil)
    }

    /// Up to `buffer.count` bytes of the current entry's data; 0 at its end. A damaged or cut-short archive throws
    /// rather than ending the entry early.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(LoadError) -> Int {
        let got = try Self.inUTF8 { archive_read_data(archive, buffer.baseAddress, buffer.count) }
        guard got >= 0 else { throw failure("cannot read the entry's data from") }
        return got
    }

    /// A `LoadError` for what libarchive reports: the system's errno where it has one, else a damaged archive.
    private func failure(_ doing: String) -> LoadError {
        let message = archive_error_string(archive).map { String(cString: $0) } ?? "unknown error"
        let reason = "\(doing) the archive \(path): \(message)"
        switch archive_errno(archive) {
        case ENOENT, ENOTDIR: return LoadError(.fileDoesNotExist, url: url, reason: reason)
        case EACCES, EPERM: return LoadError(.noPermissionsToReadFile, url: url, reason: reason)
        case EISDIR: return LoadError(.fileIsDirectory, url: url, reason: reason)
        default: return LoadError(.cannotDecodeContentData, url: url, reason: reason)
        }
    }
}
