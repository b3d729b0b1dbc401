/// The Public Suffix List (publicsuffix.org): the domains under which anyone may register a name — `com`,
/// `co.uk`, `github.io` — so that a cookie set for one of them would reach every site beneath it.
///
/// A host's public suffix is found by the list's own algorithm: the longest rule that matches (a `*` label
/// matches any one label), unless an exception rule (`!`) matches, which wins and gives one label fewer; no
/// rule at all means the host's last label. Rules and hosts are compared in their ASCII (Punycode) form, so
/// `食狮.公司.cn` and `xn--85x722f.xn--55qx5d.cn` are the same host. Both the ICANN and the private sections
/// count, as browsers use them.
///
/// ``shipped`` is a copy of the list taken with this package; ``init(rules:)`` reads another copy.
public struct PublicSuffixList: Sendable {
    /// Rules without wildcard or exception, in ASCII form.
    private let plain: Set<String>
    /// `*.X` rules, stored as `X`.
    private let wildcards: Set<String>
    /// `!X` rules, stored as `X`.
    private let exceptions: Set<String>

    /// The list shipped with this package: publicsuffix.org's (MPL-2.0; its licence is beside its rules, in
    /// `PublicSuffixRules.swift`), compiled in. `scripts/public-suffix-list` brings in a newer copy.
    public static let shipped = PublicSuffixList(rules: shippedRules)

    /// Reads a list in publicsuffix.org's format: one rule per line, the rule being the line's first word;
    /// lines starting with `//` and blank lines are skipped.
    public init(rules text: String) {
        var plain = Set<String>(), wildcards = Set<String>(), exceptions = Set<String>()
        for line in text.split(whereSeparator: \.isNewline) {
            guard let word = line.split(whereSeparator: \.isWhitespace).first, !word.hasPrefix("//") else { continue }
            if word.hasPrefix("!") {
                if let rule = Self.ascii(word.dropFirst()) { exceptions.insert(rule) }
            } else if word.hasPrefix("*.") {
                if let rule = Self.ascii(word.dropFirst(2)) { wildcards.insert(rule) }
            } else if let rule = Self.ascii(word) {
                plain.insert(rule)
            }
        }
        self.plain = plain
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// `host`'s public suffix, lowercased, in the form `host` was given in (`co.uk` for `www.example.co.uk`);
    /// `nil` for what is not a domain name: an empty label (`.com`, `a..b`), an IP address.
    public func publicSuffix(of host: String) -> String? {
        guard let (labels, length) = split(host) else { return nil }
        return labels.suffix(length).joined(separator: ".")
    }

    /// `host`'s registrable domain: its public suffix and one label more (`example.co.uk` for
    /// `www.example.co.uk`), lowercased, in the form `host` was given in; `nil` if `host` is itself a public
    /// suffix, or not a domain name (see ``publicSuffix(of:)``).
    public func registrableDomain(of host: String) -> String? {
        guard let (labels, length) = split(host), length < labels.count else { return nil }
        return labels.suffix(length + 1).joined(separator: ".")
    }

    /// Whether `domain` is a public suffix (`com`, `co.uk`, and `example` under the implicit `*` rule).
    public func isPublicSuffix(_ domain: String) -> Bool {
        guard let (labels, length) = split(domain) else { return false }
        return length == labels.count
    }

    /// `host`'s labels (lowercased) and how many of the last ones form its public suffix.
    private func split(_ host: String) -> ([String], Int)? {
        let labels = host.lowercased().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !labels.isEmpty, labels.allSatisfy({ !$0.isEmpty }), !host.contains(":"),
              let last = labels.last, !last.allSatisfy(\.isNumber) else { return nil }
        var ascii: [String] = []
        ascii.reserveCapacity(labels.count)
        for label in labels {
            guard let encoded = Punycode.asciiLabel(Substring(label)) else { return nil }
            ascii.append(encoded)
        }
        return (labels, suffixLength(ascii))
    }

    /// How many of `labels`' last labels the prevailing rule covers.
    private func suffixLength(_ labels: [String]) -> Int {
        let count = labels.count
        // Each suffix, longest first: "a.b.c", "b.c", "c".
        var suffixes: [String] = []
        suffixes.reserveCapacity(count)
        var joined = ""
        for label in labels.reversed() {
            joined = joined.isEmpty ? label : label + "." + joined
            suffixes.append(joined)
        }
        suffixes.reverse()
        // An exception prevails over every other rule, and covers one label fewer than it names.
        for (index, suffix) in suffixes.enumerated() where exceptions.contains(suffix) {
            return count - index - 1
        }
        for (index, suffix) in suffixes.enumerated() {
            if plain.contains(suffix) { return count - index }
            if index + 1 < count, wildcards.contains(suffixes[index + 1]) { return count - index }
        }
        // No rule: the implicit `*`, the last label.
        return 1
    }

    private static func ascii(_ rule: Substring) -> String? {
        let labels = rule.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        var encoded: [String] = []
        for label in labels {
            guard !label.isEmpty, let ascii = Punycode.asciiLabel(label) else { return nil }
            encoded.append(ascii)
        }
        return encoded.joined(separator: ".")
    }
}
