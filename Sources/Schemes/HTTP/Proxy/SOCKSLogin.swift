import NIOCore

/// RFC 1929's user name and password login, slipped into the SOCKS5 handshake of NIOSOCKS's client handler,
/// which offers no authentication: its greeting is rewritten to offer user name and password as well; when the
/// proxy picks that, the login is done here, and the handler is then told that the proxy picked no
/// authentication, so that it goes on with its `CONNECT`. A plain value: ``SOCKSLoginHandler`` does the I/O.
struct SOCKSLogin {
    enum State: Equatable {
        /// Before the client's greeting.
        case greeting
        /// The greeting went; waiting for the method the proxy picks.
        case selection
        /// The login went; waiting for the proxy's verdict.
        case verdict
        /// Done (logged in, or another method picked): bytes go through untouched.
        case passing
    }

    /// What the handler does with what came in.
    enum Step: Equatable {
        /// Nothing yet: the message is not whole.
        case wait
        /// Sends these bytes to the proxy.
        case send([UInt8])
        /// Hands these bytes on to the SOCKS handler, as if the proxy had sent them.
        case forward([UInt8])
        /// The proxy refused the user name and password (its status byte).
        case refused(UInt8)
    }

    private(set) var state = State.greeting
    private var received: [UInt8] = []
    private let login: [UInt8]

    /// RFC 1929's version of the subnegotiation, and the method numbers of RFC 1928.
    private static let version: UInt8 = 1, noAuthentication: UInt8 = 0, userPassword: UInt8 = 2

    /// A login as `user` with `password`; `nil` for a user name that is empty or either longer than the 255 bytes
    /// the message holds. RFC 1929 wants a password of one byte at least too; an empty one is sent (as curl sends
    /// it), for the proxy to judge.
    init?(user: String, password: String) {
        let user = Array(user.utf8), password = Array(password.utf8)
        guard (1...255).contains(user.count), password.count <= 255 else { return nil }
        login = [Self.version, UInt8(user.count)] + user + [UInt8(password.count)] + password
    }

    /// The greeting to send instead of the SOCKS handler's first write: one offering no authentication and user
    /// name and password; `nil` once the greeting went (later writes go as they are).
    mutating func greeting() -> [UInt8]? {
        guard state == .greeting else { return nil }
        state = .selection
        return [5, 2, Self.noAuthentication, Self.userPassword]
    }

    /// What to do with `bytes` from the proxy.
    mutating func receive(_ bytes: [UInt8]) -> Step {
        switch state {
        case .greeting, .passing:
            return .forward(bytes)
        case .selection:
            received += bytes
            guard received.count >= 2 else { return .wait }
            // Another method (none, or none acceptable: 0xFF), or not SOCKS5: the SOCKS handler judges it.
            guard received[0] == 5, received[1] == Self.userPassword else { return pass() }
            received.removeFirst(2)
            state = .verdict
            return .send(login)
        case .verdict:
            received += bytes
            guard received.count >= 2 else { return .wait }
            guard received[1] == 0 else {
                state = .passing
                return .refused(received[1])
            }
            received.removeFirst(2)
            // The SOCKS handler hears that no authentication was picked, and goes on as it would then.
            received.insert(contentsOf: [5, Self.noAuthentication], at: 0)
            return pass()
        }
    }

    private mutating func pass() -> Step {
        state = .passing
        defer { received = [] }
        return .forward(received)
    }
}

/// The proxy refused the user name and password (RFC 1929's status byte).
struct SOCKSLoginRefused: Error, CustomStringConvertible {
    let status: UInt8
    var description: String { "the SOCKS proxy refused the user name and password (status \(status))" }
}

/// Runs a ``SOCKSLogin`` between the connection and NIOSOCKS's `SOCKSClientHandler`; taken out with it once the
/// tunnel is open.
final class SOCKSLoginHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var login: SOCKSLogin

    init(_ login: SOCKSLogin) {
        self.login = login
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard let greeting = login.greeting() else {
            context.write(data, promise: promise)
            return
        }
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: greeting)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        switch login.receive(buffer.readBytes(length: buffer.readableBytes) ?? []) {
        case .wait:
            break
        case .send(let bytes):
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
        case .forward(let bytes):
            if !bytes.isEmpty { context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: bytes))) }
        case .refused(let status):
            context.fireErrorCaught(SOCKSLoginRefused(status: status))
        }
    }
}
