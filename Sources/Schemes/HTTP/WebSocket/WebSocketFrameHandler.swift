import FoundationEssentials
import Loader
import NIOCore
import NIOHTTP1
import NIOSSL
import NIOWebSocket

/// The end of an open WebSocket's pipeline: hands whole messages (NIO's aggregator has joined their fragments)
/// to the ``WebSocketConnection``, answers pings, answers and records the server's close, and holds reads back
/// while the reader is behind (a `receive` asks for the next read when it has taken a message).
final class WebSocketFrameHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let connection: WebSocketConnection
    private let maximumMessageSize: Int

    init(connection: WebSocketConnection, maximumMessageSize: Int) {
        self.connection = connection
        self.maximumMessageSize = maximumMessageSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            let bytes = frame.unmaskedData
            guard let text = bytes.getString(at: bytes.readerIndex, length: bytes.readableBytes),
                  text.utf8.elementsEqual(bytes.readableBytesView) else {
                fail(context, .invalidFramePayloadData, LoadError(.cannotDecodeContentData, url: connection.url, reason: "the server sent a text message that is not UTF-8"))
                return
            }
            connection.received(.string(text))
        case .binary:
            connection.received(.data(Data(frame.unmaskedData.readableBytesView)))
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            connection.pong(frame.unmaskedData)
        case .connectionClose:
            var payload = frame.unmaskedData
            // RFC 6455 §5.5.1 and §7.4: no payload, or a code a close frame may carry and a UTF-8 reason.
            guard payload.readableBytes != 1 else {
                fail(context, .protocolError, LoadError(.badServerResponse, url: connection.url, reason: "the server sent a close frame of one byte"))
                return
            }
            let code = payload.readInteger(as: UInt16.self).map { WebSocketTask.CloseCode(rawValue: Int($0)) }
            if let code, !code.maySend {
                fail(context, .protocolError, LoadError(.badServerResponse, url: connection.url,
                                                        reason: "the server closed the WebSocket with \(code), a code no close frame may carry"))
                return
            }
            let reason = payload.readableBytes > 0 ? Data(payload.readableBytesView) : nil
            if let reason, String(validating: reason, as: UTF8.self) == nil {
                fail(context, .invalidFramePayloadData, LoadError(.cannotDecodeContentData, url: connection.url,
                                                                  reason: "the server's close frame has a reason that is not UTF-8"))
                return
            }
            let said = reason.map { " '\(String(decoding: $0.prefix(123), as: UTF8.self))'" } ?? ""
            connection.ended(LoadError(.networkConnectionLost, url: connection.url,
                                       reason: "the server closed the WebSocket with \(code.map(\.description) ?? "no code")\(said)"),
                             code: code ?? .noStatusReceived, reason: reason)
            if connection.claimClose() {
                // The close handshake: the server's code echoed back; the server then ends the TCP connection.
                var echo = context.channel.allocator.buffer(capacity: 2)
                if let code { echo.writeInteger(UInt16(truncatingIfNeeded: code.rawValue)) }
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: echo)), promise: nil)
            }
            // The server closes the connection; one that does not is closed after a while.
            let channel = context.channel
            channel.eventLoop.scheduleTask(in: WebSocketConnection.patience) { channel.close(promise: nil) }
        default:
            // Reserved opcodes are refused before the aggregator (``PerMessageDeflateHandler``).
            break
        }
    }

    func read(context: ChannelHandlerContext) {
        // Held while the reader is behind (its next `receive` asks again), unless a pong is awaited: the handler
        // below reads on for it, holding what comes before it.
        if !connection.holdsReads || connection.awaitsPong { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let aggregation = error as? NIOWebSocketFrameAggregator.Error, aggregation == .accumulatedFrameSizeIsTooLarge {
            fail(context, .messageTooBig, LoadError(.dataLengthExceedsMaximum, url: connection.url,
                                                    reason: "a message passed the maximum of \(maximumMessageSize) bytes", underlying: error))
        } else if let frameError = error as? NIOWebSocketError, frameError == .invalidFrameLength {
            fail(context, .messageTooBig, LoadError(.dataLengthExceedsMaximum, url: connection.url,
                                                    reason: "a frame passed the maximum of \(maximumMessageSize) bytes", underlying: error))
        } else if case MessageInflateError.tooLarge = error {
            fail(context, .messageTooBig, LoadError(.dataLengthExceedsMaximum, url: connection.url, reason: "\(error)", underlying: error))
        } else if error is MessageInflateError {
            fail(context, .invalidFramePayloadData, LoadError(.cannotDecodeContentData, url: connection.url, reason: "\(error)", underlying: error))
        } else if error is MessageFrameError {
            fail(context, .protocolError, LoadError(.badServerResponse, url: connection.url, reason: "the server broke the WebSocket protocol: \(error)", underlying: error))
        } else if error is NIOWebSocketError || error is NIOWebSocketFrameAggregator.Error {
            fail(context, .protocolError, LoadError(.badServerResponse, url: connection.url, reason: "the server broke the WebSocket protocol: \(error)", underlying: error))
        } else {
            // The connection itself failed (a reset, a TLS close without close_notify): nothing to send a frame on.
            let mapped = HTTPErrorMapping.map(error, url: connection.url)
            connection.ended(LoadError(.networkConnectionLost, url: connection.url, reason: mapped.reason ?? "the connection failed", underlying: error),
                             code: .abnormalClosure, reason: nil)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // After the frames the upgrade held back (``CloseHeldForUpgrade``).
        endWithoutCloseFrame()
        context.fireChannelInactive()
    }

    private func endWithoutCloseFrame() {
        connection.ended(LoadError(.networkConnectionLost, url: connection.url, reason: "the connection closed without a WebSocket close frame"),
                         code: .abnormalClosure, reason: nil)
    }

    /// Ends the connection for a fault of the server's: a close frame with `code`, then the connection closes.
    private func fail(_ context: ChannelHandlerContext, _ code: WebSocketTask.CloseCode, _ error: LoadError) {
        connection.ended(error, code: code, reason: nil)
        if connection.claimClose() {
            var payload = context.channel.allocator.buffer(capacity: 2)
            payload.writeInteger(UInt16(truncatingIfNeeded: code.rawValue))
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload)), promise: nil)
        }
        context.close(promise: nil)
    }
}
