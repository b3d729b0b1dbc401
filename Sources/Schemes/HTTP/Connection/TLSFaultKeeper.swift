import FoundationEssentials
import Loader
import NIOCore

/// Keeps the first error the TLS handler reports on a connection. Under TLS 1.3 a server refuses the client's
/// certificate with an alert just after the handshake has completed on the client's side: the connection then
/// closes, often while the pool is still putting it to use or before a response has begun, and without this
/// the load would report a bare close (and might be retried on another connection, refused alike).
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

    /// The server's refusal of the client certificate (or of its absence) kept in `fault`, its HTTP/1 answer to a
    /// connection that spoke HTTP/2 from the start (``ServerPrefaceCheck``), or its breach of HTTP/2
    /// (``HTTP2ProtocolViolation``), as the load's error; `nil` for any other fault, whose close is reported (and
    /// retried) as before.
    static func refusal(in fault: Locked<(any Error)?>?, url: URL) -> LoadError? {
        guard let error = fault?.withLock({ $0 }) else { return nil }
        let mapped = HTTPErrorMapping.map(error, url: url)
        let refused = mapped.code == .clientCertificateRequired || mapped.code == .clientCertificateRejected || error is any HTTP2ProtocolError
        return refused ? mapped : nil
    }
}
