import FoundationEssentials
import Loader
import NIOCore
import NIOSOCKS

/// The handlers around NIOSOCKS's `SOCKSClientHandler` that open a tunnel through a SOCKS5 proxy on a connection
/// that does not read on its own (`autoRead` off), which that handler expects: ``ReadPump`` (before it) asks
/// for each read until the tunnel is open, and ``Outcome`` (after it) succeeds `established` when the proxy
/// says the tunnel is up, or fails it with a ``LoadError`` naming the proxy. The TLS and HTTP handlers are
/// added once it is open, after the three are taken out.
enum SOCKSTunnel {
    /// The three handlers in pipeline order.
    static func handlers(to host: String, port: Int, through proxy: HTTPClientOptions.Proxy, url: URL,
                         established: EventLoopPromise<Void>) throws -> (ReadPump, SOCKSClientHandler, Outcome) {
        let address: SOCKSAddress
        // Checked before the connection is made too (the pool's dial): NIOSOCKS traps on a longer name.
        guard host.utf8.count <= 255 else {
            throw LoadError(.badURL, url: url, reason: "the host name is longer than the 255 bytes a SOCKS5 proxy takes")
        }
        if host.isIPAddress {
            address = .address(try SocketAddress(ipAddress: host, port: port))
        } else {
            address = .domain(host, port: port)
        }
        let pump = ReadPump()
        let target = HTTPClientOptions.Proxy.authority(host, port)
        return (pump, SOCKSClientHandler(targetAddress: address),
                Outcome(pump: pump, name: HTTPClientOptions.Proxy.authority(proxy.host, proxy.port), target: target, url: url, established: established))
    }

    /// Asks for a read when the connection is up and after each read, until told to stop.
    final class ReadPump: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        fileprivate var stopped = false

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { context.read() }
        }

        func channelActive(context: ChannelHandlerContext) {
            context.fireChannelActive()
            context.read()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            context.fireChannelRead(data)
            if !stopped { context.read() }
        }
    }

    /// Hears the SOCKS handler's outcome.
    final class Outcome: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        private let pump: ReadPump
        private let name: String
        private let target: String
        private let url: URL
        private let established: EventLoopPromise<Void>

        fileprivate init(pump: ReadPump, name: String, target: String, url: URL, established: EventLoopPromise<Void>) {
            self.pump = pump
            self.name = name
            self.target = target
            self.url = url
            self.established = established
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            guard event is SOCKSProxyEstablishedEvent else {
                context.fireUserInboundEventTriggered(event)
                return
            }
            pump.stopped = true
            established.succeed()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            // A server cannot speak before the client's request or TLS hello: bytes now are the proxy's.
            fail(context, LoadError(.badServerResponse, url: url, reason: "the SOCKS proxy \(name) sent bytes after opening the tunnel to \(target)"))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            let said: String
            if let failure = error as? SOCKSError.ConnectionFailed {
                said = "could not connect to \(target) (SOCKS reply \(failure.reply.value))"
            } else if error is SOCKSError.InvalidAuthenticationSelection || error is SOCKSError.NoValidAuthenticationMethod {
                fail(context, LoadError(.userAuthenticationRequired, url: url, reason: "the SOCKS proxy \(name) asks for an authentication this client does not do", underlying: error))
                return
            } else {
                said = "broke the SOCKS5 handshake: \(error)"
            }
            fail(context, LoadError(.cannotConnectToHost, url: url, reason: "the SOCKS proxy \(name) \(said)", underlying: error))
        }

        func channelInactive(context: ChannelHandlerContext) {
            established.fail(LoadError(.networkConnectionLost, url: url, reason: "the SOCKS proxy \(name) closed the connection before opening the tunnel to \(target)"))
            context.fireChannelInactive()
        }

        private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
            established.fail(error)
            context.close(promise: nil)
        }
    }
}
