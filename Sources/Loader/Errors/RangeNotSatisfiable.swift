/// A request's byte range that starts at or past the resource's end: the underlying error of a ``LoadError`` with
/// code ``LoadError/Code/resourceUnavailable`` from a handler without statuses (`file:`, `ftp:`), where HTTP would
/// answer 416. A caller can tell it from a resource that is not there (curl exits 36 for it, not 78).
public struct RangeNotSatisfiable: Error, Sendable, Hashable, CustomStringConvertible {
    /// The resource's size in bytes, when the handler knows it.
    public let size: Int64?

    /// Makes the error for a resource of `size` bytes (`nil`: not known).
    public init(size: Int64?) {
        self.size = size
    }

    /// The refusal, in words.
    public var description: String {
        size.map { "the range starts past the end of the \($0)-byte resource" } ?? "the range starts past the end of the resource"
    }
}
