import NIOCore
import Synchronization

/// How many batches of reads a connection has had from its server, counted by ``ReadStamp``.
final class ReadCount: Sendable {
    /// The batches so far.
    let batches = Atomic<UInt64>(0)
}

/// Counts, in ``ReadCount``, each batch of reads of the connection's bytes as it completes, below the protocol's
/// handlers: whatever the server sends (a stream's DATA included, which NIOHTTP2's handler passes to the stream and not
/// down the connection's pipeline) shows it is still there. A count, not a clock: one add per batch on every HTTP/2
/// connection, where a look at the clock is only needed while a check waits.
final class ReadStamp: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let count: ReadCount

    init(_ count: ReadCount) {
        self.count = count
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        count.batches.add(1, ordering: .relaxed)
        context.fireChannelReadComplete()
    }
}
