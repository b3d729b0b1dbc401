import FoundationEssentials
import Loader
import NIOCore

/// Opens a tunnel through a SOCKS4 proxy (``SOCKS4Handshake``) on a connection that does not read on its own: sends
/// the request once the connection is up, reads the reply through ``SOCKSTunnel/ReadPump``, and succeeds
/// `established`, or fails it with a ``LoadError`` naming the proxy. Taken out once the tunnel is open
/// (``SOCKSTunnel/remove(from:)``), before the TLS and HTTP handlers go in.
final class SOCKS4Handler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var handshake: SOCKS4Handshake
    private let pump: SOCKSTunnel.ReadPump
    /// The proxy's and the target's `host:port`, for messages.
    private let name: String
    private let target: String
    private let url: URL
    private let established: EventLoopPromise<Void>
    private var sent = false
    /// Whether `established` was completed (granted or failed), and whether it was granted.
    private var done = false
    private var granted = false

    init(_ handshake: SOCKS4Handshake, pump: SOCKSTunnel.ReadPump, name: String, target: String, url: URL,
         established: EventLoopPromise<Void>) {
        self.handshake = handshake
        self.pump = pump
        self.name = name
        self.target = target
        self.url = url
        self.established = established
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    private func send(_ context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: handshake.request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Between the grant and this handler's removal nothing may come (the HTTP handlers are not there yet to read it):
        // the server cannot speak before the client's first bytes. The connection closes, as the SOCKS5 handshake's
        // `Outcome` closes it; the pool, which already has it, then finds it closed.
        if granted { return fail(context, LoadError(.badServerResponse, url: url, reason: "the SOCKS proxy \(name) sent bytes after opening the tunnel to \(target)")) }
        guard !done else { return }
        let buffer = unwrapInboundIn(data)
        switch handshake.receive(buffer.readableBytesView) {
        case .wait:
            return
        case .granted(extra: 0):
            done = true
            granted = true
            pump.stopped = true
            established.succeed()
        case .granted:
            fail(context, LoadError(.badServerResponse, url: url, reason: "the SOCKS proxy \(name) sent bytes after opening the tunnel to \(target)"))
        case .refused(let code):
            // 92 and 93 are about identd and the user ID; 91, and any code SOCKS4 does not define, a refusal.
            let error = LoadError(code == 92 || code == 93 ? .userAuthenticationRequired : .cannotConnectToHost, url: url,
                                  reason: "the SOCKS4 proxy \(name) \(SOCKS4Handshake.meaning(of: code)) to \(target) (SOCKS4 reply \(code))")
            fail(context, error)
        case .malformed(let version):
            fail(context, LoadError(.cannotConnectToHost, url: url,
                                    reason: "the SOCKS proxy \(name) did not answer as a SOCKS4 proxy (its reply began with \(version), not 0)"))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !done else { return context.fireErrorCaught(error) }
        fail(context, LoadError(.cannotConnectToHost, url: url, reason: "the SOCKS proxy \(name) broke the SOCKS4 handshake: \(error)", underlying: error))
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            established.fail(SOCKSTunnel.proxyFailure(LoadError(.networkConnectionLost, url: url,
                                                                reason: "the SOCKS proxy \(name) closed the connection before opening the tunnel to \(target)"), proxy: name))
        }
        context.fireChannelInactive()
    }

    /// Fails the tunnel with `error` (if it was not granted already), and closes the connection.
    private func fail(_ context: ChannelHandlerContext, _ error: LoadError) {
        done = true
        established.fail(SOCKSTunnel.proxyFailure(error, proxy: name))
        context.close(promise: nil)
    }
}
