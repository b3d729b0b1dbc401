import Loader
import NIOCore
import NIOSSL
import NIOTLS

/// Keeps the server's leaf certificate when the TLS handshake completes, for the delegate's server-trust
/// question, so that the question is asked without another trip to the event loop.
///
/// Sits between the TLS handler and the HTTP codec. The certificate crosses threads through a lock: the
/// thread sanitizer sees a lock, but not a future completed on the loop and awaited by a task that finds
/// it already done.
final class PeerCertificateKeeper: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let leaf: Locked<NIOSSLCertificate?>
    /// The TLS handler whose peer this is (through an HTTPS proxy, the pipeline has the proxy's before it).
    private let tls: NIOSSLClientHandler

    init(into leaf: Locked<NIOSSLCertificate?>, from tls: NIOSSLClientHandler) {
        self.leaf = leaf
        self.tls = tls
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Before the event goes on: the forwarder behind completes the handshake promise on it.
        if case TLSUserEvent.handshakeCompleted = event {
            // nil when the server sent no certificate.
            let certificate = tls.peerCertificate
            leaf.withLock { $0 = certificate }
        }
        context.fireUserInboundEventTriggered(event)
    }
}
