import NIOCore

/// The last bytes (up to 16) of a stream of bytes, kept inline: enough to tell whether a response ended
/// exactly where a socket read did.
struct TailBytes: Equatable {
    /// The bytes, the latest in the low byte.
    private(set) var value: UInt128 = 0
    /// How many of the 16 are filled.
    private(set) var count = 0

    /// The end of a head (and of a chunked body): an empty line.
    static let emptyLine = TailBytes(bytes: [0x0D, 0x0A, 0x0D, 0x0A])

    init() {}

    private init(bytes: [UInt8]) {
        for byte in bytes { push(byte) }
    }

    private mutating func push(_ byte: UInt8) {
        value = (value << 8) | UInt128(byte)
        count = min(count + 1, 16)
    }

    /// Adds the end of `buffer`'s readable bytes.
    mutating func append(_ buffer: ByteBuffer) {
        let count = buffer.readableBytes
        guard count > 0 else { return }
        buffer.withUnsafeReadableBytes { bytes in
            for byte in bytes[(count - min(count, 16))...] { push(byte) }
        }
    }

    /// Whether the bytes end with `other`'s, as far as both reach.
    func endsLike(_ other: TailBytes) -> Bool {
        let shared = min(count, other.count)
        let mask: UInt128 = shared == 16 ? ~0 : (1 << (8 * shared)) - 1
        return value & mask == other.value & mask
    }
}

/// Sits before the HTTP decoder and notes the last bytes each read brought, for the ``ResponseForwarder``.
///
/// NIO's decoder says nothing of bytes after a response's end that stop inside the next head (a server that
/// answers twice, the second answer cut by the read): it holds them and, once the connection carries another
/// request, gives their head to that request's response. A response whose last bytes are not the read's last
/// ones had bytes after it, and its connection is not reused; a read while the connection is idle closes it.
final class ReadTail: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The last bytes read, up to 16.
    private(set) var bytes = TailBytes()
    /// How many reads brought bytes: one while the connection is idle is a server speaking unasked, even when
    /// the decoder keeps what it said (the start of a head) to itself.
    private(set) var reads = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        bytes.append(unwrapInboundIn(data))
        reads &+= 1
        context.fireChannelRead(data)
    }
}
