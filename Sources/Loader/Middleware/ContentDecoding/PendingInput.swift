import FoundationEssentials

/// Compressed bytes a decoder was given and has not taken in yet: what is left of earlier input, then the new.
struct PendingInput {
    private var bytes = Data()
    /// Where the bytes not yet taken in start.
    private var offset = 0

    /// How many bytes are waiting.
    var count: Int { bytes.count - offset }
    var isEmpty: Bool { offset >= bytes.count }

    /// Adds `data` after what is waiting (copying only when some of the old input is still waiting).
    mutating func append(_ data: Data) {
        if isEmpty {
            bytes = data
        } else {
            var rest = bytes.withUnsafeBytes { Data($0.dropFirst(offset)) }
            rest.append(data)
            bytes = rest
        }
        offset = 0
    }

    /// Marks `taken` bytes as taken in.
    mutating func advance(by taken: Int) {
        offset += taken
    }

    /// The waiting byte at `index` (from the first waiting one), if there is one.
    func byte(at index: Int) -> UInt8? {
        index < count ? bytes[bytes.startIndex + offset + index] : nil
    }

    /// Calls `body` with the waiting bytes.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0.dropFirst(offset))) }
    }
}
