import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A SOCKS4 proxy on 127.0.0.1 that answers as told, for what dante cannot show: SOCKS4a (dante refuses it), identd's
/// refusals, a reply that is not SOCKS4's, a close before the reply. It keeps each request it reads whole. After a
/// reply that grants the tunnel, it is the server at the tunnel's end too: it answers the HTTP request that comes
/// through with `200` and the body ``body``, and closes.
final class ScriptedSOCKS4Server: Sendable {
    /// The body of the response it sends through a tunnel it granted.
    static let body = "through the tunnel"

    let port: Int
    private let channel: any Channel
    private let received: Requests

    /// A proxy that answers each request with `reply` (sent as it is), or closes without a word when it is `nil`.
    init(reply: [UInt8]?) throws {
        let received = Requests()
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(reply: reply, received: received))
                }
            }
        channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress!.port!
        self.received = received
    }

    deinit {
        channel.close(promise: nil)
    }

    /// The SOCKS4 requests read so far, each whole, in order.
    var requests: [[UInt8]] { received.all.withLock { $0 } }

    /// A SOCKS4 reply with `code` (90 grants the tunnel).
    static func reply(_ code: UInt8) -> [UInt8] { [0, code, 0, 0, 0, 0, 0, 0] }

    private final class Requests: Sendable {
        let all = Mutex<[[UInt8]]>([])
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let reply: [UInt8]?
        let received: Requests
        var bytes: [UInt8] = []
        /// Whether the SOCKS request was read, and the bytes since are the tunnel's.
        var tunnelling = false

        init(reply: [UInt8]?, received: Requests) {
            self.reply = reply
            self.received = received
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += unwrapInboundIn(data).readableBytesView
            if !tunnelling {
                guard let length = Self.requestLength(bytes) else { return }
                received.all.withLock { $0.append(Array(bytes[..<length])) }
                bytes.removeFirst(length)
                tunnelling = true
                guard let reply else { return context.close(promise: nil) }
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: reply)), promise: nil)
                if reply.count < 2 || reply[1] != 90 { return }
            }
            // An HTTP request's head through the tunnel: answered, then the connection closes.
            guard bytes.firstRange(of: Array("\r\n\r\n".utf8)) != nil else { return }
            let response = "HTTP/1.1 200 OK\r\nContent-Length: \(ScriptedSOCKS4Server.body.utf8.count)\r\nConnection: close\r\n\r\n\(ScriptedSOCKS4Server.body)"
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: response))).whenComplete { _ in bound.value.close(promise: nil) }
            bytes = []
        }

        /// The length of the whole request at the start of `bytes`: 8 bytes, the user ID and its NUL, and for
        /// SOCKS4a (an address of 0.0.0.x, x not 0) the name and its NUL; `nil` until it is all there.
        static func requestLength(_ bytes: [UInt8]) -> Int? {
            guard bytes.count > 8, let userEnd = bytes[8...].firstIndex(of: 0) else { return nil }
            guard bytes[4] == 0, bytes[5] == 0, bytes[6] == 0, bytes[7] != 0 else { return userEnd + 1 }
            return bytes[(userEnd + 1)...].firstIndex(of: 0).map { $0 + 1 }
        }
    }
}
