import FoundationEssentials

/// The cookie file format Netscape began and curl (`-b FILE`, `-c FILE`), wget and browser exporters keep: one
/// cookie a line, seven fields split by tabs.
///
/// ```
/// # Netscape HTTP Cookie File
/// .example.com	TRUE	/	TRUE	1795771605	session	s3cr3t
/// #HttpOnly_www.example.com	FALSE	/docs	FALSE	0	theme	dark
/// ```
///
/// The fields are the domain (with a leading dot when subdomains share the cookie), whether subdomains share it
/// (`TRUE`/`FALSE`), the path, whether it is `Secure`, when it expires in seconds since 1970 (`0` for a session
/// cookie), the name and the value. `#HttpOnly_` before the domain marks an `HttpOnly` cookie, as curl writes
/// it; other lines starting with `#` are comments.
public enum NetscapeCookieFile {
    /// The cookies in `text`, in the file's order. Comments, blank lines, lines that do not have the seven
    /// fields (or six, for an empty value) or whose expiry is not a number, and cookies expired at `now` are
    /// skipped, as curl skips them.
    /// - Parameters:
    ///   - text: The file's contents.
    ///   - now: The time expiry is judged at, and each cookie's creation time.
    public static func cookies(in text: String, now: Date = Date()) -> [Cookie] {
        text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).compactMap { cookie(in: $0, now: now) }
    }

    /// The cookie one line holds, or `nil` for a comment or a line that is none.
    private static func cookie(in line: Substring, now: Date) -> Cookie? {
        // Blanks before a line are skipped, as curl reads the file.
        var line = line.drop { $0 == " " || $0 == "\t" }
        let httpOnlyMark = "#HttpOnly_"
        let isHTTPOnly = line.hasPrefix(httpOnlyMark)
        if isHTTPOnly { line = line.dropFirst(httpOnlyMark.count) } else if line.hasPrefix("#") { return nil }
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 7 || fields.count == 6, let seconds = Int64(fields[4]), seconds >= 0 else { return nil }
        let domain = fields[0].hasPrefix(".") ? fields[0].dropFirst() : fields[0]
        guard !domain.isEmpty, !fields[5].isEmpty else { return nil }
        let expires = seconds == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(seconds))
        let cookie = Cookie(name: String(fields[5]), value: fields.count == 7 ? String(fields[6]) : "",
                            domain: String(domain), isHostOnly: fields[1].uppercased() != "TRUE",
                            path: fields[2].isEmpty ? "/" : String(fields[2]), expires: expires,
                            isSecure: fields[3].uppercased() == "TRUE", isHTTPOnly: isHTTPOnly, created: now)
        return cookie.isExpired(at: now) ? nil : cookie
    }

    /// The file's text for `cookies`, with a header comment, session cookies written with expiry `0`. A cookie
    /// with a tab or a line break in any field is left out: the line would not read back as it was.
    public static func text(for cookies: [Cookie]) -> String {
        var text = "# Netscape HTTP Cookie File\n# Written by loadurl's cookie jar. Lines: domain, subdomains too, path, secure, expires, name, value.\n\n"
        for cookie in cookies {
            let fields = [
                (cookie.isHTTPOnly ? "#HttpOnly_" : "") + (cookie.isHostOnly ? "" : ".") + cookie.domain,
                cookie.isHostOnly ? "FALSE" : "TRUE",
                cookie.path,
                cookie.isSecure ? "TRUE" : "FALSE",
                String(cookie.expires.map { Int64($0.timeIntervalSince1970.rounded(.down)) } ?? 0),
                cookie.name,
                cookie.value,
            ]
            guard !fields.contains(where: { $0.contains(where: { $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) }) else { continue }
            text += fields.joined(separator: "\t") + "\n"
        }
        return text
    }
}
