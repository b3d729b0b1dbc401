import Foundation
import NIOCore
import NIOSSL
import NIOTLS
import Synchronization

/// A TLS server on 127.0.0.1 (nginx's certificate for `localhost`) that hangs up its first connection as soon as
/// the handshake ends, before any request could come, and answers each later connection's one request with its
/// method, then closes. For a client that pauses between its handshake and its request (a delegate deciding on
/// the server's trust): its connection is gone before a byte of the request is written.
final class HangUpAfterHandshakeServer: Sendable {
    private let listener: CountingListener
    private let hungUp = HungUp()

    /// - Parameter certificateFolder: Where `server.pem` and `server.key` are (beside the test CA).
    init(certificateFolder: URL) throws {
        let certificates = try NIOSSLCertificate.fromPEMFile(certificateFolder.appendingPathComponent("server.pem").path)
        let key = try NIOSSLPrivateKey(file: certificateFolder.appendingPathComponent("server.key").path, format: .pem)
        let context = try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: certificates.map { .certificate($0) },
                                                                                privateKey: .privateKey(key)))
        let hungUp = self.hungUp
        listener = try CountingListener { pipeline, number in
            try pipeline.addHandler(NIOSSLServerHandler(context: context))
            try pipeline.addHandler(Answerer(hangsUp: number == 0 ? hungUp : nil))
        }
    }

    var port: Int { listener.port }
    /// The connections accepted so far.
    var acceptedCount: Int { listener.acceptedCount }

    /// Waits (up to 10 s) until the first connection has been closed here.
    func waitForHangUp() async {
        for _ in 0..<1000 where !hungUp.done.load(ordering: .acquiring) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private final class HungUp: Sendable {
        let done = Atomic<Bool>(false)
    }

    /// Closes at the handshake's end (`hangsUp`), or answers the request once its head and body have come.
    private final class Answerer: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        /// Set on the connection to hang up on: told once it has closed.
        let hangsUp: HungUp?
        var received = ""

        init(hangsUp: HungUp?) { self.hangsUp = hangsUp }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if hangsUp != nil, case TLSUserEvent.handshakeCompleted = event {
                context.close(promise: nil)
                return
            }
            context.fireUserInboundEventTriggered(event)
        }

        func channelInactive(context: ChannelHandlerContext) {
            hangsUp?.done.store(true, ordering: .releasing)
            context.fireChannelInactive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            received += buffer.readString(length: buffer.readableBytes) ?? ""
            let parts = received.components(separatedBy: "\r\n\r\n")
            guard parts.count > 1 else { return }
            let lines = parts[0].components(separatedBy: "\r\n")
            let length = lines.first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            guard parts.dropFirst().joined(separator: "\r\n\r\n").utf8.count >= length else { return }
            let method = lines[0].components(separatedBy: " ")[0]
            let reply = "HTTP/1.1 200 OK\r\nContent-Length: \(method.utf8.count)\r\nConnection: close\r\n\r\n\(method)"
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: reply))).whenComplete { _ in bound.value.close(promise: nil) }
        }
    }
}
