import FoundationEssentials

/// The `.` and `..` segments of a URL's path taken out, as curl does unless `--path-as-is` is given (RFC 3986
/// §5.2.4's algorithm): `/a/b/../c/./d` names `/a/c/d`, and `..` never climbs above the root.
enum DotSegments {
    /// `url` with its path's dot segments removed; `url` itself when its path has none, or when it has no
    /// hierarchical path to take them from (`data:`, a plugin's opaque URL).
    static func removed(from url: URL) -> URL {
        guard url.host != nil || url.isFileURL,
              var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        let path = parts.percentEncodedPath
        guard path.contains(".") else { return url }
        let cleaned = removed(fromPath: path)
        guard cleaned != path else { return url }
        parts.percentEncodedPath = cleaned
        return parts.url ?? url
    }

    /// RFC 3986 §5.2.4 on a path as written (percent-encoded): each step moves a segment from the input to the
    /// output, or drops a dot segment and, for `..`, the last segment moved.
    static func removed(fromPath path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                // The first segment, with its leading slash if it has one, up to the next slash.
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}
