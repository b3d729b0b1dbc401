import FoundationEssentials

/// One `Set-Cookie` field value, parsed as RFC 6265 §5.2 says: a name and value, then attributes, the last of
/// each kind winning. Anything unrecognised is skipped; a value with no `=` or an empty name is no cookie.
struct SetCookie: Equatable {
    var name: String
    var value: String
    /// From `Max-Age` if given (which wins over `Expires`), else from `Expires`, at most 400 days ahead; `nil`
    /// for a session cookie.
    var expires: Date?
    /// `Domain` without its leading dot, lowercased, in its ASCII form; `nil` if absent or empty.
    var domain: String?
    /// `Path` if it starts with `/`; `nil` otherwise (the default path is used).
    var path: String?
    var isSecure = false
    var isHTTPOnly = false
    var sameSite: String?

    /// The parsed field, or `nil` if it is no cookie. `now` dates a `Max-Age`.
    init?(_ field: String, now: Date) {
        let (pair, attributes) = field.firstIndex(of: ";").map { (field[..<$0], field[field.index(after: $0)...]) }
            ?? (field[...], "")
        guard let equals = pair.firstIndex(of: "=") else { return nil }
        name = Self.trimmed(pair[..<equals])
        value = Self.trimmed(pair[pair.index(after: equals)...])
        guard !name.isEmpty else { return nil }
        var maxAge: Date?
        var expiresAttribute: Date?
        for attribute in attributes.split(separator: ";", omittingEmptySubsequences: true) {
            let equals = attribute.firstIndex(of: "=")
            let key = Self.trimmed(attribute[..<(equals ?? attribute.endIndex)]).lowercased()
            let argument = equals.map { Self.trimmed(attribute[attribute.index(after: $0)...]) } ?? ""
            switch key {
            case "expires":
                if let date = CookieDate.parse(Substring(argument)) { expiresAttribute = date }
            case "max-age":
                if let seconds = Self.deltaSeconds(argument) {
                    // Zero or less: already expired (the earliest representable time).
                    maxAge = seconds <= 0 ? Date.distantPast : now.addingTimeInterval(TimeInterval(min(seconds, Self.longestLife)))
                }
            case "domain":
                guard !argument.isEmpty else { continue }
                let domain = argument.hasPrefix(".") ? String(argument.dropFirst()) : argument
                guard !domain.isEmpty else {
                    self.domain = nil
                    continue
                }
                // Hosts arrive in their ASCII form (`xn--…`): a domain written in Unicode is compared in it too
                // (RFC 6265 §5.1.2); one that has none is no cookie.
                let labels = domain.lowercased().split(separator: ".", omittingEmptySubsequences: false).map(Punycode.asciiLabel)
                guard !labels.contains(nil) else { return nil }
                self.domain = labels.compactMap { $0 }.joined(separator: ".")
            case "path":
                path = argument.hasPrefix("/") ? argument : nil
            case "secure":
                isSecure = true
            case "httponly":
                isHTTPOnly = true
            case "samesite":
                sameSite = argument.isEmpty ? nil : argument
            default:
                continue
            }
        }
        // At most 400 days ahead, as RFC 6265bis and browsers cap it.
        expires = (maxAge ?? expiresAttribute).map { min($0, now.addingTimeInterval(TimeInterval(Self.longestLife))) }
    }

    /// The longest a cookie lives, in seconds: 400 days.
    static let longestLife = 400 * 86_400

    /// `1*DIGIT` or `-1*DIGIT`, as Max-Age's value; `nil` otherwise. Huge values are clamped, not failed.
    private static func deltaSeconds(_ text: String) -> Int? {
        let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        let magnitude = Int(digits) ?? Int.max
        return text.hasPrefix("-") ? -magnitude : magnitude
    }

    /// Without leading and trailing spaces and tabs (RFC 6265's WSP).
    private static func trimmed(_ text: Substring) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = text.firstIndex(where: { !isSpace($0) }), let end = text.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(text[start...end])
    }
}
