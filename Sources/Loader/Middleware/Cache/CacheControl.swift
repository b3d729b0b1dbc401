import FoundationEssentials
import HTTPTypes

/// The `Cache-Control` directives of a request or a response (RFC 9111 §5.2) that a private cache acts on,
/// read from every `Cache-Control` field (and a request's `Pragma: no-cache` when it has none).
struct CacheControl: Sendable, Equatable {
    var noStore = false
    var noCache = false
    var mustRevalidate = false
    var isPublic = false
    /// `private`: one user's answer (its field list, if any, is not read: the whole response counts as private).
    var isPrivate = false
    var onlyIfCached = false
    /// `max-age` in seconds; 0 for a value that is not a number, which RFC 9111 §4.2.1 asks to read as stale.
    var maxAge: Int?
    var sharedMaxAge: Int?
    var minFresh: Int?
    /// `max-stale`: `Int.max` when it has no value (any staleness will do).
    var maxStale: Int?

    init() {}

    /// The directives of `fields`; unknown ones are ignored, as RFC 9111 asks.
    init(_ fields: HTTPFields) {
        var sawField = false
        for field in fields where field.name == .cacheControl {
            sawField = true
            for directive in Self.directives(field.value) { apply(directive.name, directive.value) }
        }
        // RFC 9111 §5.4: Pragma counts only where Cache-Control is absent.
        if !sawField, let pragma = fields[HTTPField.Name("Pragma")!], Self.directives(pragma).contains(where: { $0.name == "no-cache" }) {
            noCache = true
        }
    }

    private mutating func apply(_ name: String, _ value: Substring?) {
        switch name {
        case "no-store": noStore = true
        // A `no-cache` that names fields is read as the whole response needing validation: stricter, and simpler.
        case "no-cache": noCache = true
        // `proxy-revalidate` binds shared caches alone (RFC 9111 §5.2.2.8); this one is a user agent's.
        case "must-revalidate": mustRevalidate = true
        case "public": isPublic = true
        case "private": isPrivate = true
        case "only-if-cached": onlyIfCached = true
        // RFC 9111 §4.2.1: of a directive given twice, the first counts (a proxy's appended one does not extend it).
        case "max-age": maxAge = maxAge ?? Self.seconds(value) ?? 0
        case "s-maxage": sharedMaxAge = sharedMaxAge ?? Self.seconds(value) ?? 0
        case "min-fresh": minFresh = Self.seconds(value) ?? 0
        case "max-stale": maxStale = value == nil ? Int.max : Self.seconds(value) ?? 0
        default: break
        }
    }

    /// The largest delta-seconds value (RFC 9111 §1.2.2): 2^31.
    static let maximumSeconds = 1 << 31

    /// RFC 9111 §1.2.2: delta-seconds, digits only; a value past 2^31 is read as 2^31.
    static func seconds(_ value: Substring?) -> Int? {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(value.prefix(10)).map { min($0, maximumSeconds) } ?? maximumSeconds
    }

    /// The comma-separated `name[=value]` items of one field value; a quoted value may hold commas.
    static func directives(_ text: String) -> [(name: String, value: Substring?)] {
        var result: [(name: String, value: Substring?)] = []
        var start = text.startIndex
        var index = text.startIndex
        var quoted = false
        func take(_ end: String.Index) {
            let item = text[start..<end].trimmingSpaces()
            guard !item.isEmpty else { return }
            if let equals = item.firstIndex(of: "=") {
                var value = item[item.index(after: equals)...].trimmingSpaces()
                if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
                result.append((item[..<equals].trimmingSpaces().lowercased(), value))
            } else {
                result.append((item.lowercased(), nil))
            }
        }
        while index < text.endIndex {
            let character = text[index]
            if character == "\"" { quoted.toggle() }
            if character == ",", !quoted {
                take(index)
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        take(text.endIndex)
        return result
    }
}
