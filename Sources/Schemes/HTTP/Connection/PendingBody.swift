import FoundationEssentials
import NIOCore

/// The body bytes of one read burst, handed on together when the burst ends.
///
/// A chunk that fills at least half of NIO's read buffer is handed on in that buffer, not copied: for a fast
/// download most are, and the copy was a fifth of the loader's CPU time. A smaller chunk is copied, so that
/// a few bytes never keep a large buffer alive while they wait to be read (at most twice the bytes the body
/// buffer counts), and so that the connection's kept read buffer is free again for the next read. Handing
/// the chunks on back to back, rather than each as it arrives, wakes a waiting reader once per burst
/// instead of once per body part (a socket read can hold many: TLS records, chunks).
struct PendingBody {
    /// Chunks smaller than this are copied even when they fill their buffer: a copy costs one allocation,
    /// sharing two (the `Data`'s storage and its deallocator's context).
    static let smallestShared = 16 * 1024

    /// The first chunk, kept apart: most bursts hold one, and then no array is allocated.
    private var first: Data?
    private var rest: [Data] = []

    var isEmpty: Bool { first == nil }

    /// Adds the buffer's readable bytes to the batch, sharing or copying them.
    mutating func append(_ buffer: ByteBuffer) {
        let count = buffer.readableBytes
        guard count > 0 else { return }
        let chunk: Data
        if count >= Self.smallestShared, count * 2 >= buffer.storageCapacity {
            // The deallocator keeps the buffer's storage alive for as long as the `Data` needs it.
            chunk = buffer.withUnsafeReadableBytes { bytes in
                Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!), count: bytes.count,
                     deallocator: .custom { _, _ in withExtendedLifetime(buffer) {} })
            }
        } else {
            // From the raw bytes: `Data(buffer.readableBytesView)` goes through the generic sequence
            // initializer, which looks up a protocol conformance at run time on every read.
            chunk = buffer.withUnsafeReadableBytes { Data(bytes: $0.baseAddress!, count: $0.count) }
        }
        if first == nil {
            first = chunk
        } else {
            rest.append(chunk)
        }
    }

    /// The batch, leaving this one empty.
    mutating func take() -> PendingBody {
        defer { self = PendingBody() }
        return self
    }

    /// The chunks in one, joined only if there are several (the body that comes with a response head).
    var joined: Data {
        guard var whole = first else { return Data() }
        if rest.isEmpty { return whole }
        whole.reserveCapacity(rest.reduce(whole.count) { $0 + $1.count })
        for chunk in rest { whole.append(chunk) }
        return whole
    }

    /// Calls `body` with each chunk, in order.
    func forEach(_ body: (Data) -> Void) {
        guard let first else { return }
        body(first)
        for chunk in rest { body(chunk) }
    }
}
