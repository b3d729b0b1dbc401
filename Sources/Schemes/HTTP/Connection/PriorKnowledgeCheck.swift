import Loader
import NIOCore

/// Reads the first bytes of a connection that speaks HTTP/2 from its start (prior knowledge): a server that answers
/// in HTTP/1 (nginx sends a `400` to the connection preface, then closes) is kept in `fault` as
/// ``AnsweredInHTTP1``, so that the load fails saying so rather than with a bare close. Sits before NIOHTTP2's
/// handler and passes every read on.
final class PriorKnowledgeCheck: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The server's HTTP/1 status line, where an HTTP/2 server's `SETTINGS` frame should have come.
    struct AnsweredInHTTP1: Error, CustomStringConvertible {
        let statusLine: String
        var description: String { "the server answered in HTTP/1 (\(statusLine)), not in HTTP/2 (prior knowledge)" }
    }

    private let fault: Locked<(any Error)?>
    private var checked = false

    init(into fault: Locked<(any Error)?>) {
        self.fault = fault
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !checked {
            checked = true
            let buffer = unwrapInboundIn(data)
            // An HTTP/2 server's first frame is binary; an HTTP/1 answer starts with its version.
            if buffer.readableBytes >= 5, buffer.getString(at: buffer.readerIndex, length: 5) == "HTTP/" {
                let line = buffer.readableBytesView.prefix(80).prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
                let error = AnsweredInHTTP1(statusLine: String(decoding: line, as: UTF8.self))
                fault.withLock { if $0 == nil { $0 = error } }
            }
        }
        context.fireChannelRead(data)
    }
}
