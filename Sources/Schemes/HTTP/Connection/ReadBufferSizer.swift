import NIOCore

/// How many bytes a connection reads from its socket at once: doubling after a read that filled the buffer,
/// halving after two reads in a row that would have fitted in half, as NIO's adaptive sizing does, but
/// growing past ``ReadBufferGrant/base`` only as far as the connection's grant allows.
///
/// Not a wrapper of NIO's `AdaptiveRecvByteBufferAllocator`: its size cannot be capped from outside, and a
/// cap applied only to the size it reports makes it halve against reads it never allowed, then ask again.
///
/// A plain value, owned and changed by the channel on its event loop; the grant it holds is the only shared
/// part.
struct ReadBufferSizer: RecvByteBufferAllocator {
    /// The smallest read, as in NIO's adaptive sizing.
    static let minimum = 64
    /// The first read: enough for most response heads and small bodies.
    static let initial = 2048

    private var size = Self.initial
    private var shrinksNext = false
    private let grant: ReadBufferGrant?

    /// Sizes reads starting at ``initial``, growing past ``ReadBufferGrant/base`` as far as `grant` allows,
    /// and never without one.
    init(grant: ReadBufferGrant?) {
        self.grant = grant
    }

    func nextBufferSize() -> Int? { size }

    func buffer(allocator: ByteBufferAllocator) -> ByteBuffer {
        allocator.buffer(capacity: size)
    }

    mutating func record(actualReadBytes: Int) -> Bool {
        if actualReadBytes >= size {
            shrinksNext = false
            let doubled = size * 2
            guard doubled <= ReadBufferGrant.ceiling,
                  doubled <= ReadBufferGrant.base || grant?.raise(to: doubled) == true else { return false }
            size = doubled
            return true
        }
        if actualReadBytes <= size / 2, size / 2 >= Self.minimum {
            if shrinksNext { size /= 2 }
            shrinksNext.toggle()
        } else {
            shrinksNext = false
        }
        return false
    }
}
