import FoundationEssentials

/// The parameters after a header value's first `;`, as in `attachment; filename="a \"b\".txt"; size=3`
/// (RFC 9110 §5.6.6): names lowercased, quoted strings unquoted and unescaped, in order.
enum HeaderParameters {
    static func parse(_ value: String) -> [(name: String, value: String)] {
        guard let start = value.firstIndex(of: ";") else { return [] }
        var rest = value[value.index(after: start)...]
        var parameters: [(name: String, value: String)] = []
        // Each pass consumes at least one character, so the loop ends.
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == ";" }
            guard !rest.isEmpty else { return parameters }
            let name = rest.prefix { $0 != "=" && $0 != ";" }
            rest = rest[name.endIndex...]
            guard rest.first == "=" else { continue }  // a name without a value
            rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
            var text = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let character = rest.popFirst(), character != "\"" {
                    // A backslash quotes the next character (one at the very end stays).
                    text.append(character == "\\" ? rest.popFirst() ?? "\\" : character)
                }
            } else {
                let token = rest.prefix { $0 != ";" }
                text = String(token.trimmingSpaces())
                rest = rest[token.endIndex...]
            }
            parameters.append((name.trimmingSpaces().lowercased(), text))
        }
    }
}
