import FoundationEssentials
import Loader
import NIOCore
import NIOSOCKS

/// The handlers around NIOSOCKS's `SOCKSClientHandler` that open a tunnel through a SOCKS5 proxy on a connection
/// that does not read on its own (`autoRead` off), which that handler expects: ``ReadPump`` (before it) asks
/// for each read until the tunnel is open, a ``SOCKSLoginHandler`` (before it, when the proxy has a user) logs
/// in with user name and password, and ``Outcome`` (after it) succeeds `established` when the proxy says the
/// tunnel is up, or fails it with a ``LoadError`` naming the proxy. The TLS and HTTP handlers are added once it
/// is open, after these are taken out (``remove(from:)``).
enum SOCKSTunnel {
    /// The handlers in pipeline order, for `host` (checked already: ``check(_:through:url:)``, which gave `login`).
    static func handlers(to host: String, port: Int, through proxy: HTTPClientOptions.Proxy, login: SOCKSLogin?, url: URL,
                         established: EventLoopPromise<Void>) throws -> [any ChannelHandler] {
        let address: SOCKSAddress
        let name = HTTPClientOptions.Proxy.authority(proxy.host, proxy.port)
        if host.isIPAddress {
            address = .address(try SocketAddress(ipAddress: host, port: port))
        } else {
            address = .domain(host, port: port)
        }
        let pump = ReadPump()
        let target = HTTPClientOptions.Proxy.authority(host, port)
        let outcome = Outcome(pump: pump, name: name, target: target, loggingIn: login != nil, url: url, established: established)
        return [pump] + (login.map { [SOCKSLoginHandler($0)] } ?? []) + [SOCKSClientHandler(targetAddress: address), outcome]
    }

    /// The login for `proxy`, if it has a user; throws unless the proxy can be asked for `host`: SOCKS5 gives the
    /// name, the user name and the password one byte of length each (RFC 1928 §5, RFC 1929), and NIOSOCKS traps on
    /// a longer name. The pool checks before it connects, so that the error is the request's, not the connection's.
    static func check(_ host: String, through proxy: HTTPClientOptions.Proxy, url: URL) throws -> SOCKSLogin? {
        guard host.utf8.count <= 255 else {
            throw LoadError(.badURL, url: url, reason: "the host name is longer than the 255 bytes a SOCKS5 proxy takes")
        }
        guard let credential = proxy.credential else { return nil }
        guard let login = SOCKSLogin(user: credential.user, password: credential.password) else {
            let name = HTTPClientOptions.Proxy.authority(proxy.host, proxy.port)
            throw LoadError(.userAuthenticationRequired, url: url,
                            reason: "the user name for the SOCKS proxy \(name) must be 1 to 255 bytes long, and the password at most 255")
        }
        return login
    }

    /// Takes the handshake's handlers out of `pipeline`, once the tunnel is open.
    static func remove(from pipeline: ChannelPipeline.SynchronousOperations) {
        if let pump = try? pipeline.handler(type: ReadPump.self) { pipeline.removeHandler(pump, promise: nil) }
        if let login = try? pipeline.handler(type: SOCKSLoginHandler.self) { pipeline.removeHandler(login, promise: nil) }
        if let socks = try? pipeline.handler(type: SOCKSClientHandler.self) { pipeline.removeHandler(socks, promise: nil) }
        if let outcome = try? pipeline.handler(type: Outcome.self) { pipeline.removeHandler(outcome, promise: nil) }
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
        /// Whether a user name and password were offered.
        private let loggingIn: Bool

        fileprivate init(pump: ReadPump, name: String, target: String, loggingIn: Bool, url: URL, established: EventLoopPromise<Void>) {
            self.pump = pump
            self.name = name
            self.target = target
            self.loggingIn = loggingIn
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
            } else if let refused = error as? SOCKSLoginRefused {
                fail(context, LoadError(.userAuthenticationRequired, url: url,
                                        reason: "the SOCKS proxy \(name) refused the user name and password (status \(refused.status))", underlying: error))
                return
            } else if error is SOCKSError.InvalidAuthenticationSelection || error is SOCKSError.NoValidAuthenticationMethod {
                let reason = loggingIn
                    ? "the SOCKS proxy \(name) takes neither no authentication nor a user name and password, the methods this client does"
                    : "the SOCKS proxy \(name) asks for authentication (a user name and password, if it takes those: socks5h://user:password@host:port)"
                fail(context, LoadError(.userAuthenticationRequired, url: url, reason: reason, underlying: error))
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
