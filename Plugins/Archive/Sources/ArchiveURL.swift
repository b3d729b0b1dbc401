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
        var archiveText = String(rest[..<bang.lowerBound])
        // Foundation escapes the colon of `file:` when the whole URL needed escaping (a raw space, say).
        if archiveText.lowercased().hasPrefix("file%3a") { archiveText = "file:" + archiveText.dropFirst(7) }
        guard let archive = URL(string: archiveText), archive.scheme?.lowercased() == "file" else {
            throw LoadError(.unsupportedURL, url: url, reason: "the archive must be a file: URL (archive:file:///path/a.zip!/entry)")
        }
        // A query or fragment is no part of a file's path: refused, rather than a file of the name before it opened.
        guard archive.query == nil, archive.fragment == nil else {
            throw LoadError(.badURL, url: url, reason: "the archive's URL has a query or a fragment (escape ? and # in its name)")
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
        guard let normalized = Self.normalized(entry) else {
            throw LoadError(.badURL, url: url, reason: "the entry path climbs out of the archive (..)")
        }
        self.isFolder = entry.isEmpty || entry.hasSuffix("/")
        self.entry = normalized
    }

    /// A name as archives write it (`./docs/a.txt`, `/docs/`, `docs//a.txt`) in the form compared here: `docs/a.txt`;
    /// `nil` for one with a `..` part, which names nothing inside the archive.
    static func normalized(_ name: String) -> String? {
        let parts = name.split(separator: "/").filter { $0 != "." }
        guard !parts.contains("..") else { return nil }
        return parts.joined(separator: "/")
    }

    /// Where a symbolic link of the entry `name` leads inside the archive: its target taken from the link's folder
    /// (or from the top, for an absolute one), `..` resolved; `nil` when it leads out of the archive.
    static func linkTarget(_ target: String, from name: String) -> String? {
        var parts = target.hasPrefix("/") ? [] : name.split(separator: "/").dropLast().map(String.init)
        for part in target.split(separator: "/") where part != "." {
            if part == ".." {
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            } else {
                parts.append(String(part))
            }
        }
        return parts.joined(separator: "/")
    }

    private static func decoded(_ text: inout String) -> String? {
        let bytes = text.withUTF8 { PercentDecoding.decode($0) }
        guard !bytes.contains(0) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
