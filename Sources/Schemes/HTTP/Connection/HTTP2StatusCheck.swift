import NIOCore
import NIOHPACK
import NIOHTTP2

/// Reads each HTTP/2 response head's `:status` before NIOHTTP2's HTTP/1 codec does: three digits, 100 to 999 (RFC 9113
/// §8.3.2 calls anything else malformed). NIOHTTP2 checks only the value's characters, and the codec and `HTTPTypes`
/// trap on what is left (`1000`, `-1`, an empty value): a server must not end the process, only its response.
final class HTTP2StatusCheck: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload

    /// Set once a head was refused: nothing more of the stream is passed on.
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        // Trailers carry no :status; a head carries exactly one.
        if case .headers(let headers) = unwrapInboundIn(data), case let statuses = headers.headers[":status"], !statuses.isEmpty {
            guard statuses.count == 1, let status = statuses.first, Self.isValid(status) else {
                refused = true
                context.fireErrorCaught(HTTP2MalformedStatus(value: statuses.joined(separator: ", ")))
                context.close(promise: nil)
                return
            }
        }
        context.fireChannelRead(data)
    }

    private static func isValid(_ status: String) -> Bool {
        status.utf8.count == 3 && status.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } && status.utf8.first! >= UInt8(ascii: "1")
    }
}

/// An HTTP/2 response whose `:status` is not a status code.
struct HTTP2MalformedStatus: Error, CustomStringConvertible {
    let value: String
    var description: String { "the server's HTTP/2 response has the :status '\(value)', not a three-digit status code" }
}
