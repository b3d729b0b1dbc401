/// A response whose connection ended before the response was whole: the underlying error of a ``LoadError`` with code
/// ``LoadError/Code/networkConnectionLost``, saying how far the response had come, so that a caller can tell a server
/// that answered nothing (curl's "empty reply", exit status 52) from a body cut off (curl's partial file, 18).
public struct ResponseCutShort: Error, Sendable, Hashable, CustomStringConvertible {
    /// How far a response had come when its connection ended.
    public enum Point: Sendable, Hashable {
        /// No byte of the response had come.
        case beforeResponse
        /// Part of the head had come, not all of it.
        case inHead
        /// The head and `received` bytes of the body had come (when the handler knows), of `expected` when the
        /// response said how many.
        case inBody(received: Int64?, expected: Int64?)
    }

    /// How far the response had come.
    public let point: Point

    /// Makes the error for a response cut at `point`.
    public init(_ point: Point) {
        self.point = point
    }

    /// Where the response was cut, in words.
    public var description: String {
        switch point {
        case .beforeResponse: return "no response came"
        case .inHead: return "the response head was cut short"
        case .inBody(let received, let expected):
            let of = expected.map { " of \($0)" } ?? ""
            return received.map { "the body was cut short after \($0)\(of) bytes" } ?? "the body was cut short"
        }
    }
}
