import NIOCore
import NIOPosix
import Synchronization

/// A server on 127.0.0.1 that answers whatever a connection first sends with fixed bytes, then closes it: for a
/// client speaking a protocol the scripted servers do not parse (HTTP/2 with prior knowledge). Counts connections.
final class RawReplyServer: Sendable {
    let port: Int
    private let channel: any Channel
    private let accepted = Counter()

    init(reply: [UInt8]) throws {
        let accepted = self.accepted
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.value.add(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Replier(reply: reply))
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress!.port!
    }

    deinit {
        channel.close(promise: nil)
    }

    /// The connections accepted so far.
    var acceptedCount: Int { accepted.value.load(ordering: .relaxed) }

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

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
