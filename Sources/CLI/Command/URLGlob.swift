/// A URL argument read as curl reads its globs: `{one,two}` sets and `[1-10]`, `[001-100:5]` (zero-padded to the
/// first number's width, in steps of 5) or `[a-z]` ranges, each naming a URL per value, every combination in
/// order (the last glob varying fastest). `\` before `{`, `}`, `[`, `]` or `,` takes it as written, and so is an
/// IPv6 address in brackets (`http://[::1]:8080/`). `-o` names take the values with `#1`, `#2`, … (``fill(_:with:)``).
struct URLGlob {
    /// A stretch of the URL: as written, or one of several values.
    enum Piece: Equatable {
        case literal(String)
        case glob([String])
    }

    /// The URL's pieces, in order.
    let pieces: [Piece]

    /// The most URLs one argument may name: the expansion is held in memory, a URL of 100 bytes or so each.
    static let limit = 1_000_000

    /// A glob that names no URL: where (1-based, in characters) and why, as curl says it.
    struct Malformed: Error, CustomStringConvertible {
        let url: String
        let position: Int
        let problem: String

        var description: String { "bad URL glob: \(problem) at position \(position) of '\(url.prefix(200))' (-g takes it as written)" }
    }

    /// `text` as written: a URL of no globs.
    init(literal text: String) {
        pieces = [.literal(text)]
    }

    /// Whether `text` holds a character that makes or escapes a glob (`{`, `}`, `[`, `]`, `\`), so that it must be read.
    static func mayHoldGlob(_ text: String) -> Bool {
        text.utf8.contains { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "}") || $0 == UInt8(ascii: "]") }
    }

    /// Reads `text`'s globs.
    init(_ text: String) throws(Malformed) {
        let characters = Array(text)
        var pieces: [Piece] = []
        var literal = ""
        var index = 0
        func fail(_ problem: String, at position: Int) -> Malformed { Malformed(url: text, position: position + 1, problem: problem) }
        while index < characters.count {
            let character = characters[index]
            switch character {
            case "\\" where index + 1 < characters.count && "{}[],".contains(characters[index + 1]):
                literal.append(characters[index + 1])
                index += 2
            case "{":
                var values: [String] = []
                var value = ""
                var end = index + 1
                while true {
                    guard end < characters.count else { throw fail("unmatched brace", at: index) }
                    let inside = characters[end]
                    if inside == "\\", end + 1 < characters.count, "{}[],".contains(characters[end + 1]) {
                        value.append(characters[end + 1])
                        end += 2
                        continue
                    }
                    if inside == "{" { throw fail("nested brace", at: end) }
                    if inside == "[" || inside == "]" { throw fail("bracket within braces", at: end) }
                    end += 1
                    if inside == "," || inside == "}" {
                        values.append(value)
                        value = ""
                        if inside == "}" { break }
                    } else {
                        value.append(inside)
                    }
                }
                if !literal.isEmpty { pieces.append(.literal(literal)) }
                literal = ""
                pieces.append(.glob(values))
                index = end
            case "[":
                guard let close = characters[(index + 1)...].firstIndex(of: "]") else { throw fail("unmatched bracket", at: index) }
                let inside = String(characters[(index + 1)..<close])
                if Self.isIPv6Address(inside) {
                    literal += "[" + inside + "]"
                } else {
                    guard let values = Self.range(inside) else { throw fail("bad range '[\(inside)]'", at: index) }
                    if !literal.isEmpty { pieces.append(.literal(literal)) }
                    literal = ""
                    pieces.append(.glob(values))
                }
                index = close + 1
            case "}", "]":
                throw fail("unmatched \(character == "}" ? "brace" : "bracket")", at: index)
            default:
                literal.append(character)
                index += 1
            }
        }
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        self.pieces = pieces
        guard count <= Self.limit else {
            throw Malformed(url: text, position: 1, problem: "the globs name \(count) URLs, more than \(Self.limit)")
        }
    }

    /// Whether the URL has a glob: one that has none is itself alone.
    var hasGlobs: Bool { pieces.contains { if case .glob = $0 { true } else { false } } }

    /// How many URLs it names (saturating: ``limit`` is far below the largest `Int`).
    var count: Int {
        pieces.reduce(1) { total, piece in
            guard case .glob(let values) = piece else { return total }
            let (product, overflow) = total.multipliedReportingOverflow(by: values.count)
            return overflow ? Int.max : product
        }
    }

    /// Every URL it names, in order, with the values of its globs (for ``fill(_:with:)``).
    func expanded() -> [(url: String, values: [String])] {
        var results: [(url: String, values: [String])] = [("", [])]
        for piece in pieces {
            switch piece {
            case .literal(let text):
                for position in results.indices { results[position].url += text }
            case .glob(let values):
                results = results.flatMap { partial in values.map { (partial.url + $0, partial.values + [$0]) } }
            }
        }
        return results
    }

    /// `name` with each `#N` (N from 1) replaced by the N-th glob's value, as curl fills an `-o` name; a `#` followed
    /// by no such number stays as written.
    static func fill(_ name: String, with values: [String]) -> String {
        var filled = ""
        var rest = Substring(name)
        while let mark = rest.firstIndex(of: "#") {
            filled += rest[..<mark]
            let digits = rest[rest.index(after: mark)...].prefix { $0.isASCII && $0.isNumber }
            if let number = Int(digits), number >= 1, number <= values.count {
                filled += values[number - 1]
                rest = rest[digits.endIndex...]
            } else {
                filled += "#"
                rest = rest[rest.index(after: mark)...]
            }
        }
        return filled + rest
    }

    /// An IPv6 address (with a zone) in brackets, which is no range: hex digits, `:` and `.` only, with a `:`.
    private static func isIPv6Address(_ text: String) -> Bool {
        let address = text.split(separator: "%", maxSplits: 1).first ?? ""
        return address.contains(":") && address.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }

    /// The values of a range: `FIRST-LAST` of numbers (zero-padded to `FIRST`'s width when it starts with `0`) or of
    /// letters of one case, with an optional `:STEP`; `nil` when it is none.
    private static func range(_ text: String) -> [String]? {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let step = parts.count == 2 ? Int(parts[1]) : 1
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard let step, step >= 1, bounds.count == 2 else { return nil }
        let (first, last) = (bounds[0], bounds[1])
        if let low = Int(first), let high = Int(last), first.allSatisfy(\.isASCII), last.allSatisfy(\.isASCII), low >= 0, low <= high {
            guard (high - low) / step < limit else { return nil }
            let width = first.hasPrefix("0") ? first.count : 0
            return stride(from: low, through: high, by: step).map { value in
                let digits = String(value)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
        }
        let lower = UInt8(ascii: "a")...UInt8(ascii: "z"), upper = UInt8(ascii: "A")...UInt8(ascii: "Z")
        guard first.count == 1, last.count == 1, let low = first.first?.asciiValue, let high = last.first?.asciiValue, low <= high,
              lower.contains(low) && lower.contains(high) || upper.contains(low) && upper.contains(high) else { return nil }
        return stride(from: low, through: high, by: step).map { String(UnicodeScalar($0)) }
    }
}
