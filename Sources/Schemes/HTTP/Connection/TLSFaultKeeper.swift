import Loader
import NIOCore

/// Keeps the first error the TLS handler reports on a new connection, so that the pool can name it when the
/// connection closes before it is handed out. Under TLS 1.3 a server refuses the client's certificate with an
/// alert just after the handshake has completed on the client's side: the connection then closes, and its
/// pipeline is torn down, while the pool is still putting it to use.
///
/// Sits right after the TLS handler; passes every error on.
final class TLSFaultKeeper: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let fault: Locked<(any Error)?>

    init(into fault: Locked<(any Error)?>) {
        self.fault = fault
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fault.withLock { if $0 == nil { $0 = error } }
        context.fireErrorCaught(error)
    }
}
