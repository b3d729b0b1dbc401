import FoundationEssentials
import Loader

/// An `archive:` URL taken apart: the archive's own URL and the entry's path inside it, as Java's `jar:` URLs
/// write them: `archive:file:///srv/site.zip!/docs/index.html`. An entry path that is empty or ends in `/`
/// names a folder of the archive, which is listed.
struct ArchiveURL {
    /// The archive's URL (a `file:` URL).
    let archive: URL
    /// The local path of the archive.
    let path: String
    /// The entry's path, percent-decoded, without leading or trailing `/`; empty for the archive's top.
    let entry: String
    /// Whether the URL names a folder (its entry path is empty or ends in `/`).
    let isFolder: Bool

    init(_ url: URL) throws(LoadError) {
        let text = url.absoluteString
        guard let colon = text.firstIndex(of: ":"), text[..<colon].lowercased() == "archive" else {
            throw LoadError(.badURL, url: url, reason: "an archive URL starts with archive:")
        }
        let rest = text[text.index(after: colon)...]
        guard let bang = rest.firstRange(of: "!/") else {
            throw LoadError(.badURL, url: url, reason: "an archive URL names its entry after '!/' (archive:file:///a.zip!/entry)")
        }
        guard let archive = URL(string: String(rest[..<bang.lowerBound])), archive.scheme?.lowercased() == "file" else {
            throw LoadError(.unsupportedURL, url: url, reason: "the archive must be a file: URL (archive:file:///path/a.zip!/entry)")
        }
        if let host = archive.host(percentEncoded: false), !host.isEmpty, host.lowercased() != "localhost" {
            throw LoadError(.unsupportedURL, url: url, reason: "file: URLs on another host (\(host)) are not supported")
        }
        var encodedPath = archive.path(percentEncoded: true)
        var encodedEntry = String(rest[bang.upperBound...])
        // A fragment or query never names part of the entry.
        if let cut = encodedEntry.firstIndex(where: { $0 == "#" || $0 == "?" }) { encodedEntry = String(encodedEntry[..<cut]) }
        guard let path = Self.decoded(&encodedPath), !path.isEmpty, let entry = Self.decoded(&encodedEntry) else {
            throw LoadError(.badURL, url: url, reason: "the archive path or the entry path does not decode to UTF-8 without NUL bytes")
        }
        self.archive = archive
        self.path = path
        self.isFolder = entry.isEmpty || entry.hasSuffix("/")
        self.entry = Self.normalized(entry)
    }

    /// A name as archives write it (`./docs/a.txt`, `/docs/`, `docs//a.txt`) in the form compared here: `docs/a.txt`.
    static func normalized(_ name: String) -> String {
        name.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
    }

    private static func decoded(_ text: inout String) -> String? {
        let bytes = text.withUTF8 { PercentDecoding.decode($0) }
        guard !bytes.contains(0) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
