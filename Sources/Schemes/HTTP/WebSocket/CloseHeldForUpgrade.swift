import NIOCore
import NIOHTTP1

/// Sits at the socket's end of a WebSocket handshake's pipeline and holds a close back for one turn of the loop while
/// NIO's client upgrade handler is in place.
///
/// A server may send its `101`, a first message and its close in one read. NIO's upgrade then removes the HTTP decoder
/// on a later turn of the loop, when the decoder hands on the bytes after the `101` (the message) — unless the close
/// reached the decoder first: it then drops them as the end of a connection it was parsing. Held back one turn, the
/// close comes after that removal (scheduled when the `101` was read, so run first), and so after the upgrade has put
/// the WebSocket handlers in place and given them the message. A close with no upgrade under way is late by a turn.
final class CloseHeldForUpgrade: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func channelInactive(context: ChannelHandlerContext) {
        guard (try? context.pipeline.syncOperations.handler(type: NIOHTTPClientUpgradeHandler.self)) != nil else {
            context.fireChannelInactive()
            return
        }
        // Before the pipeline's teardown, which the close schedules after this.
        let held = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute { held.value.fireChannelInactive() }
    }
}
