import NIOCore

/// A server on 127.0.0.1 that answers whatever a connection first sends with fixed bytes, then closes it: for a
/// client speaking a protocol the scripted servers do not parse (HTTP/2 with prior knowledge). Counts connections.
final class RawReplyServer: Sendable {
    private let listener: CountingListener

    init(reply: [UInt8]) throws {
        listener = try CountingListener { pipeline, _ in try pipeline.addHandler(Replier(reply: reply)) }
    }

    var port: Int { listener.port }
    /// The connections accepted so far.
    var acceptedCount: Int { listener.acceptedCount }

    private final class Replier: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let reply: [UInt8]

        init(reply: [UInt8]) {
            self.reply = reply
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = context.channel.allocator.buffer(bytes: reply)
            // The close follows the write out, which goes first.
            context.writeAndFlush(NIOAny(bytes), promise: nil)
            context.close(promise: nil)
        }
    }
}
