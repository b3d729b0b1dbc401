import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import Synchronization

/// A cleartext HTTP/2 server (prior knowledge) on 127.0.0.1 that ends streams as nginx cannot be made to: each
/// path is a script. It answers each request as its HEADERS arrive.
///
/// | path | answer |
/// |---|---|
/// | `/reset` | `RST_STREAM` with `INTERNAL_ERROR`, no response |
/// | `/reset-mid-body` | a 200 head announcing 10,000 bytes, 1,000 of them, then `RST_STREAM` with `INTERNAL_ERROR` |
/// | `/refused-once` | `RST_STREAM` with `REFUSED_STREAM` the first time, then 200 `served N` (N: the requests so far) |
/// | `/refused-always` | `RST_STREAM` with `REFUSED_STREAM` |
/// | `/stream-at-once` | a 200 head, then 64-byte `DATA` frames every millisecond until the stream closes |
/// | `/length-mismatch` | a 200 head announcing 10 bytes, then 5 of them ending the stream (a stream error, RFC 9113 §8.1.1) |
/// | `/bad-field` | a 200 head with a field named in capitals (a malformed response, RFC 9113 §8.2.1) |
/// | `/no-answer` | no response (the connection is read on: its PINGs are answered) |
/// | `/go-silent` | no response, nothing the client sends on the connection taken in any more, and nothing sent on it (its PINGs unanswered): a server gone silent, its socket open |
/// | `/connection-error` | no response: a `PING` of 7 bytes on the connection, a connection error (RFC 9113 §6.7), and then nothing |
/// | `/huge-head` | a 200 head of about 100 KiB (a field of 100,000 bytes), past the 80 KiB the client announces |
/// | anything else | 404 |
public final class ScriptedHTTP2Server: Sendable {
    /// The port it listens on.
    public let port: Int
    private let channel: any Channel
    private let log = RequestLog()

    /// Starts listening on a free port of 127.0.0.1; it stops when the server is released (its connections stay until
    /// their clients close them).
    public init() throws {
        let log = self.log
        // What the scripts send is checked by no one here: malformed answers are the point.
        let connection = {
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            connection.headerBlockValidation = .disabled
            connection.contentLengthValidation = .disabled
            return connection
        }()
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                log.connections.withLock { $0 += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Silencer())
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(StreamScript(log: log)) }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress!.port!
    }

    deinit {
        channel.close(promise: nil)
    }

    /// How many connections it has taken.
    public var connections: Int { log.connections.withLock { $0 } }

    /// How many requests for `path` it has had.
    public func requests(for path: String) -> Int {
        log.paths.withLock { $0.count { $0 == path } }
    }

    /// The paths requested, in order.
    private final class RequestLog: Sendable {
        let paths = Mutex<[String]>([])
        /// The connections taken.
        let connections = Mutex(0)
    }

    /// First on each connection: once silent, drops every byte the client sends (its PINGs and requests unread), and
    /// every byte NIOHTTP2 would still send: a PING that came in one read with the `/go-silent` request (on a loaded
    /// machine, the server may read both at once) reached NIOHTTP2 before the silence, which acknowledged it.
    private final class Silencer: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = IOData
        var isSilent = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !isSilent { context.fireChannelRead(data) }
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if isSilent {
                promise?.succeed()
            } else {
                context.write(data, promise: promise)
            }
        }
    }

    /// Answers one stream's request as its path says.
    private final class StreamScript: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        private let log: RequestLog

        init(log: RequestLog) {
            self.log = log
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .headers(let request) = unwrapInboundIn(data), let path = request.headers.first(name: ":path") else { return }
            let count = log.paths.withLock { log in
                log.append(path)
                return log.count { $0 == path }
            }
            switch path {
            case "/reset":
                context.writeAndFlush(wrapOutboundOut(.rstStream(.internalError)), promise: nil)
            case "/reset-mid-body":
                context.write(wrapOutboundOut(head(200, ["content-length": "10000"])), promise: nil)
                // The reset once the bytes are out: NIOHTTP2 drops a stream's DATA still queued when its reset is written.
                let written = context.eventLoop.makePromise(of: Void.self)
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                written.futureResult.whenSuccess { bound.value.writeAndFlush(NIOAny(HTTP2Frame.FramePayload.rstStream(.internalError)), promise: nil) }
                context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "a"), count: 1000))))),
                                      promise: written)
            case "/refused-once" where count == 1, "/refused-always":
                context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
            case "/refused-once":
                let body = ByteBuffer(string: "served \(count)")
                context.write(wrapOutboundOut(head(200, ["content-length": "\(body.readableBytes)"])), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
            case "/stream-at-once":
                // Begun as the request's HEADERS arrive, while its body may still be coming.
                context.writeAndFlush(wrapOutboundOut(head(200, [:])), promise: nil)
                Self.keepSending(NIOLoopBound(context, eventLoop: context.eventLoop))
            case "/length-mismatch":
                context.write(wrapOutboundOut(head(200, ["content-length": "10"])), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(string: "12345")), endStream: true))), promise: nil)
            case "/bad-field":
                context.writeAndFlush(wrapOutboundOut(head(200, ["X-Capital": "1", "content-length": "0"], endStream: true)), promise: nil)
            case "/no-answer":
                break
            case "/huge-head":
                // Written below NIOHTTP2's handler, which sends no header block longer than one frame: HEADERS and
                // CONTINUATION frames of 16 KiB, ":status: 200" and a field of 100,000 bytes, no Huffman coding.
                guard let connection = try? context.channel.parent?.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self),
                      let stream = try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID) else { return }
                connection.writeAndFlush(NIOAny(IOData.byteBuffer(ByteBuffer(bytes: Self.hugeHeaderBlock(stream: Int(stream))))), promise: nil)
            case "/go-silent":
                // Whatever reaches the connection from now on is dropped before NIOHTTP2 sees it (reads turned off were
                // turned on again by the streams' own reads, now and then).
                (try? context.channel.parent?.pipeline.syncOperations.handler(type: Silencer.self))?.isSilent = true
            case "/connection-error":
                // Written below NIOHTTP2's handler, which would not send a malformed frame.
                let ping: [UInt8] = [0, 0, 7, 0x6, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 7)
                guard let connection = try? context.channel.parent?.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self) else { return }
                connection.writeAndFlush(NIOAny(IOData.byteBuffer(ByteBuffer(bytes: ping))), promise: nil)
            case let path where path.hasPrefix("/status/"):
                // A :status as the path spells it, however malformed ("/status/1000", "/status/-1", "/status/").
                let status = HPACKHeaders([(":status", String(path.dropFirst("/status/".count)))])
                context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: status, endStream: true))), promise: nil)
            default:
                context.writeAndFlush(wrapOutboundOut(head(404, ["content-length": "0"], endStream: true)), promise: nil)
            }
        }

        /// A small DATA frame now and the next in a millisecond, while the stream is open; only while it is writable
        /// (the client's window has room), so that a client that stops reading makes this wait, not pile up frames.
        private static func keepSending(_ bound: NIOLoopBound<ChannelHandlerContext>) {
            let context = bound.value
            guard context.channel.isActive else { return }
            if context.channel.isWritable {
                let frame = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "e"), count: 64))))
                context.writeAndFlush(NIOAny(frame), promise: nil)
            }
            context.eventLoop.scheduleTask(in: .milliseconds(1)) { keepSending(bound) }
        }

        /// The frames of a header block of about 100 KiB on `stream`: `:status: 200` (HPACK's static index 8), then a
        /// field `x-huge` of 100,000 bytes as a literal without indexing, in a HEADERS frame and CONTINUATION frames.
        private static func hugeHeaderBlock(stream: Int) -> [UInt8] {
            var block: [UInt8] = [0x88, 0x00, 6] + Array("x-huge".utf8)
            // The value's length, an HPACK integer with a 7-bit prefix.
            var length = 100_000 - 127
            block.append(0x7F)
            while length >= 128 {
                block.append(UInt8(length % 128 + 128))
                length /= 128
            }
            block.append(UInt8(length))
            block += [UInt8](repeating: UInt8(ascii: "h"), count: 100_000)
            var frames: [UInt8] = []
            var offset = 0
            while offset < block.count {
                let chunk = block[offset..<min(offset + 16_384, block.count)]
                let type: UInt8 = offset == 0 ? 0x1 : 0x9
                // END_HEADERS on the last; END_STREAM on the HEADERS frame.
                let flags: UInt8 = (offset + chunk.count == block.count ? 0x4 : 0) | (offset == 0 ? 0x1 : 0)
                frames += [UInt8(chunk.count >> 16), UInt8(chunk.count >> 8 & 0xFF), UInt8(chunk.count & 0xFF), type, flags,
                           UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
                frames += chunk
                offset += chunk.count
            }
            return frames
        }

        private func head(_ status: Int, _ fields: KeyValuePairs<String, String>, endStream: Bool = false) -> HTTP2Frame.FramePayload {
            var headers = HPACKHeaders([(":status", "\(status)")])
            for (name, value) in fields { headers.add(name: name, value: value) }
            return .headers(.init(headers: headers, endStream: endStream))
        }
    }
}
