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
    private var done = false

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
        guard !done else { return }
        let buffer = unwrapInboundIn(data)
        switch handshake.receive(buffer.readableBytesView) {
        case .wait:
            return
        case .granted(extra: 0):
            done = true
            pump.stopped = true
            established.succeed()
        case .granted:
            fail(context, LoadError(.badServerResponse, url: url, reason: "the SOCKS proxy \(name) sent bytes after opening the tunnel to \(target)"))
        case .refused(let code):
            let error = LoadError(code == 91 ? .cannotConnectToHost : .userAuthenticationRequired, url: url,
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
            established.fail(LoadError(.networkConnectionLost, url: url, reason: "the SOCKS proxy \(name) closed the connection before opening the tunnel to \(target)"))
        }
        context.fireChannelInactive()
    }

    private func fail(_ context: ChannelHandlerContext, _ error: LoadError) {
        done = true
        established.fail(error)
        context.close(promise: nil)
    }
}
