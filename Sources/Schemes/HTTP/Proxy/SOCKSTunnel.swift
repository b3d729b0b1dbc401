import FoundationEssentials
import Loader
import NIOCore
import NIOSOCKS

/// The handlers that open a tunnel through a SOCKS proxy on a connection that does not read on its own (`autoRead`
/// off): ``ReadPump`` first asks for each read until the tunnel is open. For SOCKS4, ``SOCKS4Handler`` follows. For
/// SOCKS5, NIOSOCKS's `SOCKSClientHandler` follows (which expects that), a ``SOCKSLoginHandler`` before it when the
/// proxy has a user (it logs in with user name and password), and ``Outcome`` after it, which succeeds
/// `established` when the proxy says the tunnel is up, or fails it with a ``LoadError`` naming the proxy. The TLS
/// and HTTP handlers are added once it is open, after these are taken out (``remove(from:)``).
enum SOCKSTunnel {
    /// The handshake a SOCKS proxy is asked for, its bytes checked before the connection is made.
    enum Handshake {
        /// SOCKS5, logging in when there is a login.
        case socks5(SOCKSLogin?)
        /// SOCKS4 or SOCKS4a, its request made.
        case socks4(SOCKS4Handshake)
    }

    /// The handlers in pipeline order, to `host` at `port` (checked already: ``check(_:port:through:url:)``, which
    /// gave `handshake`).
    static func handlers(to host: String, port: Int, through proxy: HTTPClientOptions.Proxy, handshake: Handshake, url: URL,
                         established: EventLoopPromise<Void>) throws -> [any ChannelHandler] {
        let name = HTTPClientOptions.Proxy.authority(proxy.host, proxy.port)
        let pump = ReadPump()
        let target = HTTPClientOptions.Proxy.authority(host, port)
        switch handshake {
        case .socks4(let request):
            return [pump, SOCKS4Handler(request, pump: pump, name: name, target: target, url: url, established: established)]
        case .socks5(let login):
            let address: SOCKSAddress = if host.isIPAddress {
                .address(try SocketAddress(ipAddress: host, port: port))
            } else {
                .domain(host, port: port)
            }
            let outcome = Outcome(pump: pump, name: name, target: target, loggingIn: login != nil, url: url, established: established)
            return [pump] + (login.map { [SOCKSLoginHandler($0)] } ?? []) + [SOCKSClientHandler(targetAddress: address), outcome]
        }
    }

    /// `error` with a ``Loader/ProxyFailure`` of the SOCKS handshake at `proxy` as its `underlying` (the cause it had
    /// before kept inside): a tool tells such a failure from one of the server behind (curl's 97).
    static func proxyFailure(_ error: LoadError, proxy: String) -> LoadError {
        var error = error
        error.underlying = ProxyFailure(.socksHandshake, proxy: proxy, cause: error.underlying)
        return error
    }

    /// The handshake to ask `proxy` for `host` at `port`; throws unless the proxy can be asked for it. SOCKS5 gives the
    /// name, the user name and the password one byte of length each (RFC 1928 §5, RFC 1929), and NIOSOCKS traps on
    /// a longer name; SOCKS4 carries IPv4 addresses alone (an IPv6 address is refused, even for SOCKS4a, which could
    /// send it as a name), and fields that a NUL ends. The pool checks before it
    /// connects, so that the error is the request's, not the connection's.
    static func check(_ host: String, port: Int, through proxy: HTTPClientOptions.Proxy, url: URL) throws -> Handshake {
        let name = HTTPClientOptions.Proxy.authority(proxy.host, proxy.port)
        do {
            return try handshake(host, port: port, through: proxy, name: name, url: url)
        } catch {
            // A proxy that cannot be asked for the server fails as one that refused it (curl's 97).
            throw proxyFailure(error, proxy: name)
        }
    }

    /// What ``check(_:port:through:url:)`` does, its errors not yet marked as the proxy's.
    private static func handshake(_ host: String, port: Int, through proxy: HTTPClientOptions.Proxy, name: String, url: URL) throws(LoadError) -> Handshake {
        if proxy.kind == .socks4 {
            let target: SOCKS4Handshake.Target = if let address = IPAddressText.bytes(host) {
                .address(address)
            } else {
                .name(host)
            }
            do {
                return .socks4(try SOCKS4Handshake(target: target, port: port, userID: proxy.user ?? ""))
            } catch {
                let limit = SOCKS4Handshake.longestField
                switch error {
                case .notIPv4:
                    throw LoadError(.cannotConnectToHost, url: url, reason: "the SOCKS4 proxy \(name) takes IPv4 addresses only, not \(host) (socks5h:// takes any)")
                case .userID:
                    throw LoadError(.userAuthenticationRequired, url: url,
                                    reason: "the user ID for the SOCKS4 proxy \(name) must be at most \(limit) bytes, with no NUL byte")
                case .name:
                    throw LoadError(.badURL, url: url, reason: "the host name is longer than the \(limit) bytes sent to a SOCKS4a proxy, or holds a NUL byte")
                }
            }
        }
        guard host.utf8.count <= 255 else {
            throw LoadError(.badURL, url: url, reason: "the host name is longer than the 255 bytes a SOCKS5 proxy takes")
        }
        guard let credential = proxy.credential else { return .socks5(nil) }
        guard let login = SOCKSLogin(user: credential.user, password: credential.password) else {
            throw LoadError(.userAuthenticationRequired, url: url,
                            reason: "the user name for the SOCKS proxy \(name) must be 1 to 255 bytes long, and the password at most 255")
        }
        return .socks5(login)
    }

    /// Takes the handshake's handlers out of `pipeline`, once the tunnel is open.
    static func remove(from pipeline: ChannelPipeline.SynchronousOperations) {
        if let pump = try? pipeline.handler(type: ReadPump.self) { pipeline.removeHandler(pump, promise: nil) }
        if let login = try? pipeline.handler(type: SOCKSLoginHandler.self) { pipeline.removeHandler(login, promise: nil) }
        if let socks = try? pipeline.handler(type: SOCKSClientHandler.self) { pipeline.removeHandler(socks, promise: nil) }
        if let outcome = try? pipeline.handler(type: Outcome.self) { pipeline.removeHandler(outcome, promise: nil) }
        if let socks4 = try? pipeline.handler(type: SOCKS4Handler.self) { pipeline.removeHandler(socks4, promise: nil) }
    }

    /// Asks for a read when the connection is up and after each read, until told to stop.
    final class ReadPump: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        var stopped = false

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
            established.fail(SOCKSTunnel.proxyFailure(LoadError(.networkConnectionLost, url: url,
                                                                reason: "the SOCKS proxy \(name) closed the connection before opening the tunnel to \(target)"), proxy: name))
            context.fireChannelInactive()
        }

        private func fail(_ context: ChannelHandlerContext, _ error: LoadError) {
            established.fail(SOCKSTunnel.proxyFailure(error, proxy: name))
            context.close(promise: nil)
        }
    }
}
