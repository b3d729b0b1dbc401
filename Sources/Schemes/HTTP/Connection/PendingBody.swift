import FoundationEssentials
import Loader
import NIOCore

/// The body bytes of one read burst, handed on together when the burst ends.
///
/// A chunk that fills at least half of NIO's read buffer is handed on in that buffer, not copied: for a fast
/// download most are, and the copy was a fifth of the loader's CPU time. A smaller chunk is copied, so that
/// a few bytes never keep a large buffer alive while they wait to be read (at most twice the bytes the body
/// buffer counts), and so that the connection's kept read buffer is free again for the next read. Handing
/// the chunks on back to back, rather than each as it arrives, wakes a waiting reader once per burst
/// instead of once per body part (a socket read can hold many: TLS records, chunks). Small parts in a row are
/// copied into one chunk: a server that sends a body in one-byte chunks would otherwise make a chunk (and its
/// allocation, some twenty times its byte) of each, which the body buffer's limit, counting bytes, does not
/// see. The parts that come in the same burst as a response head go with it as one chunk: joined into a copy
/// when there are several, which happens at most once per response.
struct PendingBody {
    /// Chunks smaller than this are copied even when they fill their buffer: a copy costs one allocation,
    /// sharing two (the `Data`'s storage and its deallocator's context).
    static let smallestShared = 16 * 1024

    /// Most bursts hold one chunk; a queue keeps it without allocating.
    private var chunks = ChunkQueue()
    /// Copied parts since the last shared one, gathered into one chunk.
    private var copied: Data?

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
        } else if copied != nil {
            buffer.withUnsafeReadableBytes { copied!.append(contentsOf: $0) }
            return
        } else {
            // From the raw bytes: `Data(buffer.readableBytesView)` goes through the generic sequence
            // initializer, which looks up a protocol conformance at run time on every read.
            copied = buffer.withUnsafeReadableBytes { Data(bytes: $0.baseAddress!, count: $0.count) }
            return
        }
        flushCopied()
        chunks.append(chunk)
    }

    /// Ends the chunk of copied parts, if one is being gathered.
    private mutating func flushCopied() {
        if let gathered = copied.take() { chunks.append(gathered) }
    }

    /// The batch, leaving this one empty.
    mutating func take() -> PendingBody {
        flushCopied()
        defer { self = PendingBody() }
        return self
    }

    /// The chunks in one (the body that comes with a response head): a copy only when there are several.
    var joined: Data { chunks.joined }

    /// Calls `body` with each chunk, in order.
    func forEach(_ body: (Data) -> Void) {
        chunks.forEach(body)
    }
}
