/// A `Strict-Transport-Security` field's value as RFC 6797 §6.1 reads it: `max-age` (required, in seconds, quoted or
/// not) and `includeSubDomains`, directive names in any case, unknown directives ignored. A value that repeats a
/// directive, lacks `max-age` or gives it no number is not a policy, and is ignored whole.
struct HSTSHeader: Equatable {
    /// Seconds the host is to be reached over HTTPS alone; 0 ends its policy.
    let maxAge: Int
    let includesSubdomains: Bool

    /// A policy of `maxAge` seconds.
    init(maxAge: Int, includesSubdomains: Bool) {
        self.maxAge = maxAge
        self.includesSubdomains = includesSubdomains
    }

    /// The policy `value` states, or `nil` when it states none.
    init?(_ value: String) {
        var maxAge: Int?
        var includesSubdomains = false
        var seen: Set<String> = []
        for directive in Self.directives(of: value) {
            let parts = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].trimmingWhitespace().lowercased()
            guard !name.isEmpty else { continue }
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "max-age":
                guard parts.count == 2 else { return nil }
                var number = parts[1].trimmingWhitespace()
                if number.count >= 2, number.hasPrefix("\""), number.hasSuffix("\"") { number = number.dropFirst().dropLast() }
                // delta-seconds: digits only; a longer value than Int holds is as good as for ever.
                guard !number.isEmpty, number.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
                maxAge = Int(number) ?? .max
            case "includesubdomains":
                includesSubdomains = true
            default:
                continue
            }
        }
        guard let maxAge else { return nil }
        self.maxAge = maxAge
        self.includesSubdomains = includesSubdomains
    }
}

extension HSTSHeader {
    /// `value` split at the `;` that end directives: not at one inside a quoted-string value (RFC 6797 §6.1, whose
    /// values may be quoted; a backslash quotes the character after it there).
    static func directives(of value: String) -> [Substring] {
        var pieces: [Substring] = []
        var start = value.startIndex
        var quoted = false
        var escaped = false
        for index in value.indices {
            let character = value[index]
            if escaped {
                escaped = false
            } else if quoted, character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ";", !quoted {
                pieces.append(value[start..<index])
                start = value.index(after: index)
            }
        }
        pieces.append(value[start...])
        return pieces.filter { !$0.isEmpty }
    }
}

private extension Substring {
    /// Without the spaces and tabs around it.
    func trimmingWhitespace() -> Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return self[first...last]
    }
}
