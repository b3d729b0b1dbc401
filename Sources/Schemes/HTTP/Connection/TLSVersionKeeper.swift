import Loader
import NIOCore
import NIOSSL
import NIOTLS

/// Notes in a new connection's record the TLS version its handshake settled on, for the metrics of each exchange
/// it carries, then leaves the pipeline: reads after the handshake do not pass through it.
///
/// Sits right after its TLS handler: through an HTTPS proxy, the pipeline holds the proxy's TLS handler before it.
final class TLSVersionKeeper: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let record: ConnectionRecord
    private let tls: NIOSSLClientHandler

    init(into record: ConnectionRecord, from tls: NIOSSLClientHandler) {
        self.record = record
        self.tls = tls
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Before the event goes on: the handlers behind complete the handshake's promise on it.
        if case TLSUserEvent.handshakeCompleted = event {
            let version: TLSProtocolVersion? = switch tls.tlsVersion {
            case .tlsv12?: .tls12
            case .tlsv13?: .tls13
            default: nil
            }
            record.note { $0.tlsVersion = version }
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
