import NIOCore
import NIOTLS

/// Completes a TLS handshake's promise on a connection without the pool's handlers (which do it themselves):
/// succeeded when the handshake ends, failed with the error that ends it or when the connection closes first.
/// It stays in the pipeline, passing everything on.
final class HandshakeListener: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let handshake: EventLoopPromise<Void>

    init(handshake: EventLoopPromise<Void>) {
        self.handshake = handshake
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { handshake.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        handshake.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshake.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }
}
