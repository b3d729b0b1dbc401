import NIOCore
import NIOHTTP2

/// Sits between NIOHTTP2's handler and the socket (or TLS) of an HTTP/2 connection and closes the connection once a
/// `GOAWAY` with an error code has been written and flushed (RFC 9113 §5.4.1): NIOHTTP2 sends one for a connection
/// error of the server's (or for a server that stopped reading, its frames piling up) and goes on reading, so without
/// this the loads on its streams would wait out their timeouts.
///
/// Tells the connection's watcher that it was sent (``sentError``): the error NIOHTTP2 reports next is the connection's,
/// not one stream's, which it reports alike.
final class ErrorGoAwayCloser: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var scanner = OutboundFrameScanner()
    /// The error code of the first `GOAWAY` with an error this client wrote on the connection.
    private(set) var sentError: HTTP2ErrorCode?
    private var closesOnFlush = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Once one has gone, the connection is closing: what follows needs no looking at.
        switch sentError == nil ? unwrapOutboundIn(data) : nil {
        case .byteBuffer(let buffer)?:
            if let code = scanner.scan(buffer) {
                sentError = code
                closesOnFlush = true
            }
        case .fileRegion(let region)?:
            scanner.skip(region.readableBytes)
        case nil:
            break
        }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        guard closesOnFlush else { return }
        closesOnFlush = false
        // Once the call that flushed has returned: NIOHTTP2 may be in the middle of a read. What the socket did not
        // take by then is dropped with it (a server that stopped reading must not keep the loads waiting).
        let channel = context.channel
        context.eventLoop.execute { channel.close(promise: nil) }
    }
}
