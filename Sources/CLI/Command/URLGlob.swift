/// A URL argument read as curl reads its globs: `{one,two}` sets and `[1-10]`, `[001-100:5]` (zero-padded to the
/// first number's width, in steps of 5) or `[a-z]` ranges, each naming a URL per value, every combination in
/// order (the last glob varying fastest). Outside a set, `\` before `{`, `}`, `[` or `]` takes it as written, and
/// inside one before any character; an IPv6 address in brackets (`http://[::1]:8080/`) and `[]` are taken as
/// written. `-o` names take the values with `#1`, `#2`, … (``fill(_:with:)``).
struct URLGlob {
    /// A stretch of the URL: as written, or one of several values.
    enum Piece: Equatable {
        /// Text taken as written.
        case literal(String)
        /// A set's or a range's values, one per URL.
        case glob([String])
    }

    /// The URL's pieces, in order.
    let pieces: [Piece]

    /// The most URLs one argument may name: the expansion is held in memory, a URL of 100 bytes or so each.
    static let limit = 1_000_000
    /// The most globs one argument may hold, as curl's limit on its patterns.
    static let globLimit = 100

    /// A glob that names no URL: where (1-based, in characters) and why.
    struct Malformed: Error, CustomStringConvertible {
        /// The argument as given.
        let url: String
        /// Where the glob starts, in characters from 1.
        let position: Int
        /// What is wrong, in curl's words where it has some.
        let problem: String

        /// The problem, where, and the way out.
        var description: String { "bad URL glob: \(problem) at position \(position) of '\(url.prefix(200))' (-g takes it as written)" }
    }

    /// `text` as written: a URL of no globs.
    init(literal text: String) {
        pieces = [.literal(text)]
    }

    /// Whether `text` holds a character that makes or escapes a glob (`{`, `}`, `[`, `]`, `\\`), so that it must be read.
    static func mayHoldGlob(_ text: String) -> Bool {
        text.utf8.contains { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "}") || $0 == UInt8(ascii: "]") }
    }

    /// Reads `text`'s globs; throws before building more than ``limit`` URLs' worth of values.
    init(_ text: String) throws(Malformed) {
        let characters = Array(text)
        var pieces: [Piece] = []
        var literal = ""
        var index = 0
        var globs = 0
        var urls = 1
        func fail(_ problem: String, at position: Int) -> Malformed { Malformed(url: text, position: position + 1, problem: problem) }
        /// Counts a glob of `values` values starting at `position`, failing past the limits before its values are made.
        func count(_ values: Int, at position: Int) throws(Malformed) {
            globs += 1
            guard globs <= Self.globLimit else { throw fail("more than \(Self.globLimit) globs", at: position) }
            let (product, overflow) = urls.multipliedReportingOverflow(by: values)
            guard !overflow, product <= Self.limit else {
                throw fail("the globs name more than \(Self.limit) URLs", at: position)
            }
            urls = product
        }
        func add(_ values: [String]) {
            if !literal.isEmpty { pieces.append(.literal(literal)) }
            literal = ""
            pieces.append(.glob(values))
        }
        while index < characters.count {
            let character = characters[index]
            switch character {
            case "\\" where index + 1 < characters.count && "{}[]".contains(characters[index + 1]):
                literal.append(characters[index + 1])
                index += 2
            case "{":
                var values: [String] = []
                var value = ""
                var end = index + 1
                while true {
                    guard end < characters.count else { throw fail("unmatched brace", at: index) }
                    let inside = characters[end]
                    if inside == "\\", end + 1 < characters.count {
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
                if values == [""] { throw fail("empty string within braces", at: index) }
                try count(values.count, at: index)
                add(values)
                index = end
            case "[" where index + 1 < characters.count && characters[index + 1] == "]":
                literal += "[]"
                index += 2
            case "[":
                guard let close = characters[(index + 1)...].firstIndex(of: "]") else { throw fail("unmatched bracket", at: index) }
                let inside = String(characters[(index + 1)..<close])
                if Self.isIPv6Address(inside) {
                    literal += "[" + inside + "]"
                } else {
                    guard let range = Range(inside) else { throw fail("bad range '[\(inside)]'", at: index) }
                    try count(range.count, at: index)
                    add(range.values)
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

    /// An IPv6 address (with a zone) in brackets, which is no range: hex digits, `:` and `.` only, with two `:` at
    /// least (`::1`), so that a mistyped `[10:20]` stays a bad range.
    private static func isIPv6Address(_ text: String) -> Bool {
        let address = text.split(separator: "%", maxSplits: 1).first ?? ""
        return address.filter { $0 == ":" }.count >= 2 && address.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }

    /// A range's bounds and step, read as curl reads them: `FIRST-LAST` of numbers (zero-padded to `FIRST`'s width when it
    /// starts with `0`) or of letters of one case, `:STEP` optional; a step wider than the range, or other than 1
    /// for a range of one value, is none.
    private struct Range {
        let low: Int
        let high: Int
        let step: Int
        /// The digits each number is padded to; `nil` for letters.
        let width: Int?

        init?(_ text: String) {
            let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard bounds.count == 2, let step = parts.count == 2 ? Self.number(parts[1]) : 1, step >= 1 else { return nil }
            let (first, last) = (bounds[0], bounds[1])
            if let low = Self.number(first), let high = Self.number(last) {
                (self.low, self.high, self.width) = (low, high, first.hasPrefix("0") ? first.count : 0)
            } else {
                let lower = UInt8(ascii: "a")...UInt8(ascii: "z"), upper = UInt8(ascii: "A")...UInt8(ascii: "Z")
                guard first.count == 1, last.count == 1, let low = first.first?.asciiValue, let high = last.first?.asciiValue,
                      lower.contains(low) && lower.contains(high) || upper.contains(low) && upper.contains(high) else { return nil }
                (self.low, self.high, self.width) = (Int(low), Int(high), nil)
            }
            guard low <= high, low == high ? step == 1 : step <= high - low else { return nil }
            self.step = step
        }

        /// How many values.
        var count: Int { (high - low) / step + 1 }

        /// The values, in order.
        var values: [String] {
            (0..<count).map { offset in
                let value = low + offset * step
                guard let width else { return String(UnicodeScalar(UInt8(value))) }
                let digits = String(value)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
        }

        /// ASCII digits only (no sign), of a size that cannot overflow a count.
        private static func number(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.count <= 12, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(text)
        }
    }
}
