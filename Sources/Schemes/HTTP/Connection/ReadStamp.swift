import NIOCore
import Synchronization

/// When a connection last read anything from its server (uptime nanoseconds), stamped by ``ReadStamp``.
final class ReadClock: Sendable {
    /// The latest read's time; 0 before any.
    let last = Atomic<UInt64>(0)
}

/// Stamps ``ReadClock`` as each batch of reads of the connection's bytes completes, below the protocol's handlers:
/// whatever the server sends (a stream's DATA included, which NIOHTTP2's handler passes to the stream and not down the
/// connection's pipeline) shows it is still there.
final class ReadStamp: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let clock: ReadClock

    init(_ clock: ReadClock) {
        self.clock = clock
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        clock.last.store(NIODeadline.now().uptimeNanoseconds, ordering: .relaxed)
        context.fireChannelReadComplete()
    }
}
