import FoundationEssentials

/// The buffer a decoder writes its output into, kept for the decoder's life. Each call's output is copied out at its
/// own size: a call that produced nothing (it needs more input) costs no allocation, a small body costs its bytes
/// rather than a zero-filled window, and a piece handed on holds no more memory than it carries.
final class OutputWindow {
    /// Its size: the most one call may produce.
    let capacity: Int
    /// The bytes a call writes into (uninitialized until written).
    let bytes: UnsafeMutableRawBufferPointer

    init(capacity: Int) {
        self.capacity = capacity
        bytes = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        bytes.deallocate()
    }

    /// A copy of the first `count` bytes written.
    func copy(_ count: Int) -> Data {
        Data(bytes: bytes.baseAddress!, count: count)
    }
}
