import Loader
import NIOCore

/// Reads the first bytes of a connection that speaks HTTP/2 from its start (prior knowledge): a server that answers
/// in HTTP/1 (nginx sends a `400` to the connection preface, then closes) is kept in `fault` as
/// ``AnsweredInHTTP1``, so that the load fails saying so rather than with a bare close. Sits before NIOHTTP2's
/// handler and passes every read on; looks at the first line only, however the reads split it.
final class PriorKnowledgeCheck: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The server's HTTP/1 status line, where an HTTP/2 server's `SETTINGS` frame should have come.
    struct AnsweredInHTTP1: HTTP2ProtocolError, CustomStringConvertible {
        let statusLine: String
        var description: String { "the server answered in HTTP/1 (\(statusLine)), not in HTTP/2 (prior knowledge)" }
    }

    /// The most of a status line kept for the message.
    private static let lineLimit = 80
    private static let version = Array("HTTP/".utf8)

    private let fault: Locked<(any Error)?>
    /// The first bytes, while they may still be an HTTP/1 status line; `nil` once decided.
    private var head: [UInt8]? = []

    init(into fault: Locked<(any Error)?>) {
        self.fault = fault
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if var seen = head {
            let buffer = unwrapInboundIn(data)
            seen += buffer.readableBytesView.prefix(Self.lineLimit - seen.count)
            head = seen
            // An HTTP/2 server's first frame is binary; an HTTP/1 answer starts with its version.
            if !seen.starts(with: Self.version.prefix(seen.count)) {
                head = nil
            } else if seen.count >= Self.version.count {
                // Kept at once, before NIOHTTP2 takes these bytes for a frame and fails, and made whole as the rest
                // of the line comes.
                let line = seen.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
                let error = AnsweredInHTTP1(statusLine: String(decoding: line, as: UTF8.self))
                fault.withLock { if $0 == nil || $0 is AnsweredInHTTP1 { $0 = error } }
                if line.count < seen.count || seen.count == Self.lineLimit { head = nil }
            }
        }
        context.fireChannelRead(data)
    }
}
