/// A `Content-Range` of bytes (RFC 9110 §14.4): `bytes FIRST-LAST/COMPLETE` (COMPLETE `*` when unknown), or an
/// unsatisfied range's `bytes */COMPLETE`. What a client reads to know where a partial body (206) starts, and a
/// 416's length of the whole.
public struct ContentRange: Equatable, Sendable {
    /// The first byte sent; `nil` for an unsatisfied range.
    public private(set) var first: Int64?
    /// The last byte sent; `nil` for an unsatisfied range.
    public private(set) var last: Int64?
    /// The whole representation's length, when given.
    public private(set) var complete: Int64?

    /// Reads a `Content-Range` field's value; `nil` unless it is a well-formed range of bytes (the last byte
    /// never before the first, nor at or past the complete length).
    public init?(_ text: String) {
        // Digits only: `Int64` would also take a sign.
        guard text.utf8.allSatisfy({ $0 != UInt8(ascii: "+") }) else { return nil }
        let parts = text.trimmingSpaces().split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let halves = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        if halves[1] == "*" { complete = nil } else {
            guard let total = Int64(halves[1]), total >= 0 else { return nil }
            complete = total
        }
        if halves[0] == "*" {
            guard complete != nil else { return nil }
            return
        }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, last >= first,
              complete.map({ last < $0 }) ?? true else { return nil }
        self.first = first
        self.last = last
    }
}
