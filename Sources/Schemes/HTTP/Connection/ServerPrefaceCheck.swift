import Loader
import NIOCore

/// Reads the first bytes an HTTP/2 connection receives, before NIOHTTP2 does, and keeps in `fault` what is wrong with
/// them, so that the loads on the connection fail saying so rather than with a bare close (NIOHTTP2 may close their
/// streams before it reports its own error):
/// - a server that answers in HTTP/1 (nginx sends a `400` to prior knowledge's preface, then closes):
///   ``AnsweredInHTTP1``, with its status line;
/// - a first frame that is not the server's `SETTINGS` (RFC 9113 §3.4): ``HTTP2ProtocolViolation``.
///
/// Passes every read on; looks at the first bytes only, however the reads split them, then leaves the pipeline (every
/// later read of the connection would pass through it for nothing).
final class ServerPrefaceCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The server's HTTP/1 status line, where an HTTP/2 server's `SETTINGS` frame should have come.
    struct AnsweredInHTTP1: HTTP2ProtocolError, CustomStringConvertible {
        let statusLine: String
        var description: String { "the server answered in HTTP/1 (\(statusLine)), not in HTTP/2" }
    }

    /// A first frame of another type than `SETTINGS`, or a `SETTINGS` acknowledgement.
    struct NotSettingsFirst: Error, CustomStringConvertible {
        let type: UInt8
        let flags: UInt8
        var description: String {
            type == 0x4 ? "its first frame acknowledges SETTINGS it was never sent" : "its first frame is of type \(type), not SETTINGS"
        }
    }

    /// The most of a status line kept for the message.
    private static let lineLimit = 80
    private static let version = Array("HTTP/".utf8)
    /// A frame header's length (RFC 9113 §4.1).
    private static let frameHeader = 9

    private let fault: Locked<(any Error)?>
    /// The first bytes, while undecided; `nil` once decided.
    private var head: [UInt8]? = []

    init(into fault: Locked<(any Error)?>) {
        self.fault = fault
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard var seen = head else { return context.fireChannelRead(data) }
        let buffer = unwrapInboundIn(data)
        seen += buffer.readableBytesView.prefix(Self.lineLimit - seen.count)
        head = seen
        if seen.starts(with: Self.version.prefix(seen.count)) {
            if seen.count >= Self.version.count {
                // Kept at once, and made whole as the rest of the line comes.
                let line = seen.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
                keep(AnsweredInHTTP1(statusLine: String(decoding: line, as: UTF8.self)), replacing: AnsweredInHTTP1.self)
                if line.count < seen.count || seen.count == Self.lineLimit { head = nil }
            }
        } else if seen.count >= Self.frameHeader {
            let (type, flags) = (seen[3], seen[4])
            if type != 0x4 || flags & 0x1 != 0 {
                keep(HTTP2ProtocolViolation(underlying: NotSettingsFirst(type: type, flags: flags)), replacing: Never.self)
            }
            head = nil
        }
        context.fireChannelRead(data)
        if head == nil { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    /// Keeps `error` unless another fault came first (or one of `replaceable`'s type, which it replaces).
    private func keep<Replaceable>(_ error: any Error, replacing replaceable: Replaceable.Type) {
        fault.withLock { if $0 == nil || $0 is Replaceable { $0 = error } }
    }
}
