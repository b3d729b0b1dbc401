import CArchive
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Loader

/// One pass over an archive with libarchive (zip, tar plain or compressed with gzip, bzip2, xz, lzma, zstd, lz4 or
/// compress, 7z, cpio, ISO 9660 and the other formats it reads): entry headers in order, and the data of the
/// current entry in chunks. Blocking reads, as `file:`'s are; one reader per pass, its descriptor closed when
/// it goes.
final class ArchiveReader {
    /// What an entry's header says.
    struct Entry {
        /// The name, normalized (``ArchiveURL/normalized(_:)``); `nil` for one that climbs out of the archive (`..`).
        var name: String?
        var isFolder: Bool
        var isRegularFile: Bool
        /// For a hard link, the name of the entry it shares its data with (normalized).
        var hardLink: String?
        /// For a symbolic link, its target as written.
        var symbolicLink: String?
        var isEncrypted: Bool
        /// The size, when the header gives it.
        var size: Int64?
        /// Seconds since 1970, when the header gives it.
        var modified: Int?
    }

    private let archive: OpaquePointer
    private let descriptor: Int32
    private let url: URL
    private let path: String
    /// Whether entries are skipped by seeking (zip read through its central directory) rather than by reading.
    private(set) var skipsBySeeking = false

    /// A UTF-8 `LC_CTYPE` for libarchive's calls: it converts entry names to the current locale's charset, and in
    /// the C locale a process starts in, a name outside ASCII does not convert (the entry comes back nameless).
    /// Set for the calling thread alone (`uselocale`), around each call, never for the process.
    // nonisolated(unsafe): a locale object made once and never changed; `uselocale` only reads it.
    nonisolated(unsafe) private static let utf8Locale: locale_t? = {
        for name in ["C.UTF-8", "C.utf8", "en_US.UTF-8"] {
            if let locale = newlocale(LC_CTYPE_MASK, name, nil) { return locale }
        }
        return nil
    }()

    private static func inUTF8<T>(_ body: () throws(LoadError) -> T) throws(LoadError) -> T {
        guard let utf8Locale else { return try body() }
        let previous = uselocale(utf8Locale)
        defer { uselocale(previous) }
        return try body()
    }

    /// Opens the archive at `path`; errors name `url` and say why (no such file, no permission, not a regular
    /// file, not an archive).
    init(path: String, url: URL) throws(LoadError) {
        self.url = url
        self.path = path
        // Non-blocking, so that a FIFO in the archive's place does not hang the open; then only a regular file.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Self.systemFailure(errno, path: path, url: url) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            let isFolder = info.st_mode & S_IFMT == S_IFDIR
            close(fd)
            throw LoadError(isFolder ? .fileIsDirectory : .cannotDecodeContentData, url: url, reason: "\(path) is not a regular file")
        }
        // libarchive is loaded with the first archive opened (see CArchive.h). Without it the scheme is not
        // there, as ftp: is not without libcurl: unsupportedURL (curl's exit 1).
        if let missing = carchive_load() {
            close(fd)
            throw LoadError(.unsupportedURL, url: url, reason: String(cString: missing))
        }
        guard let archive = carchive_read_new() else {
            close(fd)
            throw LoadError(.unknown, url: url, reason: "libarchive could not start a reader")
        }
        self.archive = archive
        self.descriptor = fd
        // Compressions libarchive undoes itself; not filter_all, which also hands some (lrzip, lzop, grzip) to an
        // outside program through the shell.
        carchive_read_support_filter_gzip(archive)
        carchive_read_support_filter_bzip2(archive)
        carchive_read_support_filter_xz(archive)
        carchive_read_support_filter_lzma(archive)
        carchive_read_support_filter_zstd(archive)
        carchive_read_support_filter_lz4(archive)
        carchive_read_support_filter_compress(archive)
        carchive_read_support_format_all(archive)
        let opened = try Self.inUTF8 { carchive_read_open_fd(archive, fd, 256 * 1024) }
        guard opened == ARCHIVE_OK else { throw failure("cannot open") }
    }

    deinit {
        carchive_read_free(archive)
        close(descriptor)
    }

    /// The next entry's header, or `nil` after the last.
    func next() throws(LoadError) -> Entry? {
        try Self.inUTF8 { () throws(LoadError) -> Entry? in try nextHeader() }
    }

    /// What libarchive said of the first damaged header it skipped (see ``next()``), if any: an entry not found may
    /// have been that one, and a listing misses it.
    private(set) var skippedDamage: String?
    /// The most damaged headers skipped in one pass: a tar block each, so 2 GiB of them.
    static let damagedHeaderLimit = 1 << 22

    private func nextHeader() throws(LoadError) -> Entry? {
        var header: OpaquePointer?
        var status = carchive_read_next_header(archive, &header)
        // A damaged header (a tar block whose checksum fails) is skipped, as GNU tar skips to the next header:
        // libarchive says so with ARCHIVE_RETRY, having read past the block, and the entries after it are intact.
        var skipped = 0
        while status == ARCHIVE_RETRY, skipped < Self.damagedHeaderLimit {
            if skippedDamage == nil { skippedDamage = carchive_error_string(archive).map { String(cString: $0) } ?? "a damaged header" }
            skipped += 1
            status = carchive_read_next_header(archive, &header)
        }
        if status == ARCHIVE_EOF { return nil }
        // A warning (an unknown extended attribute) still gives a usable header.
        guard status == ARCHIVE_OK || status == ARCHIVE_WARN, let header else { throw failure("cannot read an entry of") }
        skipsBySeeking = carchive_format(archive) & ARCHIVE_FORMAT_BASE_MASK == ARCHIVE_FORMAT_ZIP
        guard let raw = carchive_entry_pathname_utf8(header) ?? carchive_entry_pathname(header) else {
            throw LoadError(.cannotDecodeContentData, url: url, reason: "an entry's name in the archive \(path) cannot be read as UTF-8")
        }
        let name = Self.string(raw)
        let type = carchive_entry_filetype(header)
        return Entry(name: ArchiveURL.normalized(name), isFolder: type == CArchiveTypeFolder || name.hasSuffix("/"),
                     isRegularFile: type == CArchiveTypeRegular,
                     hardLink: (carchive_entry_hardlink_utf8(header) ?? carchive_entry_hardlink(header)).flatMap { ArchiveURL.normalized(Self.string($0)) },
                     symbolicLink: (carchive_entry_symlink_utf8(header) ?? carchive_entry_symlink(header)).map(Self.string),
                     isEncrypted: carchive_entry_is_encrypted(header) != 0,
                     size: carchive_entry_size_is_set(header) != 0 ? carchive_entry_size(header) : nil,
                     modified: carchive_entry_mtime_is_set(header) != 0 ? Int(carchive_entry_mtime(header)) : nil)
    }

    /// Up to `buffer.count` bytes of the current entry's data; 0 at its end. A damaged or cut-short archive throws
    /// rather than ending the entry early.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(LoadError) -> Int {
        let got = try Self.inUTF8 { carchive_read_data(archive, buffer.baseAddress, buffer.count) }
        guard got >= 0 else { throw failure("cannot read the entry's data from") }
        return got
    }

    private static func string(_ pointer: UnsafePointer<CChar>) -> String {
        String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
    }

    private static func systemFailure(_ code: Int32, path: String, url: URL) -> LoadError {
        let reason = "cannot open the archive \(path): \(String(cString: strerror(code)))"
        switch code {
        case ENOENT, ENOTDIR: return LoadError(.fileDoesNotExist, url: url, reason: reason)
        case EACCES, EPERM: return LoadError(.noPermissionsToReadFile, url: url, reason: reason)
        default: return LoadError(.cannotDecodeContentData, url: url, reason: reason)
        }
    }

    /// A `LoadError` for what libarchive reports: the system's errno where it has one, else a damaged archive.
    private func failure(_ doing: String) -> LoadError {
        let message = carchive_error_string(archive).map { String(cString: $0) } ?? "unknown error"
        let reason = "\(doing) the archive \(path): \(message)"
        switch carchive_errno(archive) {
        case EACCES, EPERM: return LoadError(.noPermissionsToReadFile, url: url, reason: reason)
        default: return LoadError(.cannotDecodeContentData, url: url, reason: reason)
        }
    }
}
