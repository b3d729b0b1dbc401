import FoundationEssentials
import Loader
import NIOCore

/// Opens a tunnel through an HTTP proxy: sends `CONNECT host:port` when the connection to the proxy is up,
/// reads the answer, and on a 2xx takes itself out of the pipeline and succeeds `established`; the TLS and HTTP
/// handlers are added after that, so that nothing of theirs reaches the proxy. Any other answer fails it with a
/// ``LoadError`` naming the proxy (the connection then closes).
///
/// The connection does not read on its own (`autoRead` off), so this handler asks for each read.
final class ProxyTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let target: String
    private let proxy: HTTPClientOptions.Proxy
    private let url: URL
    private let established: EventLoopPromise<Void>
    private var response = TunnelResponse()
    private var sent = false
    /// Where the request and the answer are told, for the first exchange's metrics.
    private let record: ConnectionRecord?

    /// - Parameters:
    ///   - target: The server's `host:port`.
    ///   - proxy: The proxy, for its credentials and for errors.
    ///   - url: The request's URL, for errors.
    ///   - established: Succeeded when the tunnel is open, failed otherwise.
    ///   - record: Where the `CONNECT` request and the proxy's answer are told.
    init(target: String, proxy: HTTPClientOptions.Proxy, url: URL, established: EventLoopPromise<Void>, record: ConnectionRecord? = nil) {
        self.record = record
        self.target = target
        self.proxy = proxy
        self.url = url
        self.established = established
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendConnect(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendConnect(context: context)
        context.fireChannelActive()
    }

    private func sendConnect(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        // The proxy's own fields stand in for ours of the same name (`Host`, `Proxy-Authorization`), as curl's
        // --proxy-header does; their values are legal (HTTPFields'): no line break to start another field.
        let fields = proxy.headerFields
        var head = "CONNECT \(target) HTTP/1.1\r\nHost: \(fields[HTTPClientOptions.Proxy.hostField] ?? target)\r\n"
        if fields[.proxyAuthorization] == nil, let authorization = proxy.authorization { head += "Proxy-Authorization: \(authorization)\r\n" }
        for field in fields where field.name != HTTPClientOptions.Proxy.hostField { head += "\(field.name.rawName): \(field.value)\r\n" }
        head += "\r\n"
        let sent = head.split(separator: "\r\n").map { "> " + $0 } + [">"]
        record?.note { $0.tunnel += sent }
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: head)), promise: nil)
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let outcome = response.append(unwrapInboundIn(data))
        if case .answered = outcome {
            let answer = response.headLines.map { "< " + $0 } + ["<"]
            record?.note { $0.tunnel += answer }
        }
        switch outcome {
        case .incomplete:
            context.read()
        case .answered(let status, _, let extra) where (200..<300).contains(status):
            // A proxy cannot speak for the server before the client's TLS hello: bytes after the answer are
            // the proxy's, not the tunnel's.
            guard extra == 0 else {
                fail(context, LoadError(.badServerResponse, url: url, reason: "the proxy \(proxyName) sent bytes after opening the tunnel to \(target)"))
                return
            }
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
            established.succeed()
        case .answered(let status, let reason, _):
            let said = "\(status)\(reason.isEmpty ? "" : " " + reason)"
            let dialogue = record?.facts.tunnel ?? []
            if status == 407 || status == 401 {
                // A Basic challenge goes with the error, for the handler to ask the delegates about. A 401 to CONNECT
                // can only be the proxy's own: tinyproxy answers a wrong credential so, with WWW-Authenticate.
                let field = status == 407 ? "proxy-authenticate" : "www-authenticate"
                let challenge = ProxyChallenge(fieldValues: response.fieldValues(named: field))
                fail(context, LoadError(.userAuthenticationRequired, url: url, reason: "the proxy \(proxyName) refused the tunnel to \(target): \(said)",
                                        underlying: ProxyTunnelRefused(status: status, dialogue: dialogue, challenge: challenge)))
            } else {
                fail(context, LoadError(.cannotConnectToHost, url: url, reason: "the proxy \(proxyName) refused the tunnel to \(target): \(said)",
                                        underlying: ProxyTunnelRefused(status: status, dialogue: dialogue)))
            }
        case .malformed(let reason):
            fail(context, LoadError(.badServerResponse, url: url, reason: reason + " (proxy \(proxyName))"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        established.fail(LoadError(.networkConnectionLost, url: url, reason: "the proxy \(proxyName) closed the connection before opening the tunnel to \(target)"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context, error)
    }

    private var proxyName: String { HTTPClientOptions.Proxy.authority(proxy.host, proxy.port) }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        established.fail(error)
        context.close(promise: nil)
    }
}
