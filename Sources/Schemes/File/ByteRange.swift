/// A single byte range from a `Range: bytes=…` header: `a-b`, `a-` or `-n` (the last n bytes).
struct ByteRange: Equatable {
    enum Spec: Equatable {
        case from(Int64, through: Int64?)
        case suffix(Int64)
    }

    let spec: Spec

    /// Parses a header value; `nil` when it is not a single byte range this handler understands.
    init?(header: String) {
        let value = header.trimmingSpaces()
        guard value.lowercased().hasPrefix("bytes=") else { return nil }
        let range = value.dropFirst(6).trimmingSpaces()
        guard !range.contains(","), let dash = range.firstIndex(of: "-") else { return nil }
        let first = range[..<dash].trimmingSpaces()
        let last = range[range.index(after: dash)...].trimmingSpaces()
        if first.isEmpty {
            guard let count = Int64(last), count > 0 else { return nil }
            spec = .suffix(count)
        } else {
            guard let start = Int64(first), start >= 0 else { return nil }
            if last.isEmpty {
                spec = .from(start, through: nil)
            } else {
                guard let end = Int64(last), end >= start else { return nil }
                spec = .from(start, through: end)
            }
        }
    }

    /// The offsets this range selects in a resource of `size` bytes, or `nil` when it selects none.
    func resolve(size: Int64) -> ClosedRange<Int64>? {
        switch spec {
        case .from(let start, let end):
            guard start < size else { return nil }
            return start...min(end ?? size - 1, size - 1)
        case .suffix(let count):
            guard size > 0 else { return nil }
            return max(0, size - count)...(size - 1)
        }
    }
}

import FoundationEssentials
