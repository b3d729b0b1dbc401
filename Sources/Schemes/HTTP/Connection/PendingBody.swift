import FoundationEssentials
import NIOCore

/// The body bytes of one read burst, handed on together when the burst ends.
///
/// Each socket read is copied out at once, so NIO gets its receive buffer back for the next read (holding
/// the buffers until the burst ended made NIO keep several per connection: 1,000 slow downloads took
/// 382 MiB instead of 156 MiB). Handing the chunks on back to back, rather than one per read as it arrives,
/// wakes a waiting reader once per burst instead of once per read.
struct PendingBody {
    private var chunks: [Data] = []

    /// Copies the buffer's readable bytes into the batch.
    mutating func append(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }
        // From the raw bytes: `Data(buffer.readableBytesView)` goes through the generic sequence
        // initializer, which looks up a protocol conformance at run time on every read.
        chunks.append(buffer.withUnsafeReadableBytes { Data(bytes: $0.baseAddress!, count: $0.count) })
    }

    /// The chunks of the batch, in order, leaving it empty.
    mutating func take() -> [Data] {
        defer { chunks = [] }
        return chunks
    }
}
