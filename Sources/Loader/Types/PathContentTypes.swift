/// MIME types for common file extensions: the `Content-Type` of `file:` and `ftp:` responses, and of any
/// handler whose scheme names files but does not type them.
public enum PathContentTypes {
    /// Lowercased extension → MIME type.
    public static let byExtension: [String: String] = [
        "html": "text/html", "htm": "text/html", "txt": "text/plain", "text": "text/plain", "md": "text/markdown",
        "css": "text/css", "csv": "text/csv", "js": "text/javascript", "mjs": "text/javascript",
        "json": "application/json", "xml": "application/xml", "svg": "image/svg+xml", "png": "image/png",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "ico": "image/x-icon",
        "avif": "image/avif", "bmp": "image/bmp", "pdf": "application/pdf", "zip": "application/zip",
        "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar", "xz": "application/x-xz",
        "bz2": "application/x-bzip2", "7z": "application/x-7z-compressed", "wasm": "application/wasm",
        "mp3": "audio/mpeg", "ogg": "audio/ogg", "wav": "audio/wav", "mp4": "video/mp4", "webm": "video/webm",
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf",
        "swift": "text/x-swift", "c": "text/x-c", "h": "text/x-c", "py": "text/x-python", "sh": "application/x-sh",
        "yaml": "application/yaml", "yml": "application/yaml", "toml": "application/toml",
    ]

    /// The type for `path`'s extension (case-insensitive), or `application/octet-stream`.
    public static func type(forPath path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "application/octet-stream" }
        return byExtension[name[name.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }
}
