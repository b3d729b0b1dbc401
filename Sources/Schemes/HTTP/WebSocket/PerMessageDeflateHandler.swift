import DequeModule
import NIOCore
import NIOWebSocket

/// Sits between NIO's frame codec and its aggregator: checks the reserved bits of each frame the server sends and,
/// when the handshake agreed to ``PerMessageDeflate``, inflates the frames of a compressed message (the first one's
/// RSV1 marks it; the aggregator would lose that bit, so this comes first) and compresses the messages sent.
///
/// Without the extension, any reserved bit set is the server's fault (RFC 6455 §5.2), reported as
/// ``MessageFrameError/reservedBits``; so is RSV1 on a control frame or on a message's later frame.
///
/// While the reader is behind (``WebSocketConnection/holdsReads``), messages' frames wait here as they came,
/// compressed: one read of small compressed frames inflated at once would be many large messages held in memory, past
/// the inbox's bound. A reader's next read lets them on; the end of the connection lets the rest on. Pings and pongs go
/// on at once (a server's keepalive is answered, the pong a ping of ours waits for is heard), and the server's close
/// lets on what waits before it. While a ping of ours waits, the socket is read on for its pong, up to
/// ``heldBytesForPong`` of waiting frames.
final class PerMessageDeflateHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let agreed: PerMessageDeflate?
    private let inflater: MessageInflater?
    private let deflater: MessageDeflater?
    private let maximumMessageSize: Int
    /// Whether the message whose frames are arriving is compressed.
    private var inflating = false
    /// The bytes the compressed message has inflated to so far.
    private var inflated = 0
    /// Set once a frame broke the rules: the connection is closing, and nothing more is passed on.
    private var failed = false
    /// The opcode of a compressed message whose first frames inflated to nothing (a sender may split its deflate data
    /// anywhere): NIO's aggregator refuses an empty frame that is not the last, so the opcode goes with the first frame
    /// that has bytes, or with the last.
    private var heldOpcode: WebSocketOpcode?
    /// Frames that came while the reader was behind, oldest first, not yet looked at.
    private var waiting: Deque<WebSocketFrame> = []
    /// The bytes of `waiting`'s frames, as they came.
    private var waitingBytes = 0
    /// The most bytes of frames held while the socket is read on for a pong: past it reading stops, and the ping is
    /// left to time out rather than memory to grow.
    static let heldBytesForPong = 4 << 20
    private let connection: WebSocketConnection

    /// `agreed` is what the handshake agreed to, or `nil` for no compression; `connection` says when the reader is behind.
    init(agreed: PerMessageDeflate?, maximumMessageSize: Int, connection: WebSocketConnection) throws {
        self.connection = connection
        self.agreed = agreed
        self.maximumMessageSize = maximumMessageSize
        if agreed != nil {
            inflater = try MessageInflater()
            guard let deflater = MessageDeflater() else { throw MessageInflateError.corrupt("zlib could not start compressing") }
            self.deflater = deflater
        } else {
            (inflater, deflater) = (nil, nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let frame = unwrapInboundIn(data)
        connection.heardFromServer()
        guard !waiting.isEmpty || connection.holdsReads else { return handle(context, frame) }
        switch frame.opcode {
        case .ping, .pong:
            // They add nothing to the inbox, and cannot wait: a server drops a client that leaves its pings unanswered.
            handle(context, frame)
        case .connectionClose:
            // It ends the socket, and what came before it is the reader's, held or not.
            while !failed, let held = popWaiting() { handle(context, held) }
            if !failed { handle(context, frame) }
        default:
            waiting.append(frame)
            waitingBytes += frame.data.readableBytes
        }
    }

    private func popWaiting() -> WebSocketFrame? {
        guard let frame = waiting.popFirst() else { return nil }
        waitingBytes -= frame.data.readableBytes
        return frame
    }

    func read(context: ChannelHandlerContext) {
        // Passed down when the reader has room or a pong is awaited (``WebSocketFrameHandler`` holds it back
        // otherwise): what waits here goes first, and the socket is read once nothing does; while a pong is awaited,
        // it is read on for it, the frames before it waiting here.
        while !failed, !connection.holdsReads, let frame = popWaiting() { handle(context, frame) }
        if waiting.isEmpty, !connection.holdsReads {
            context.read()
        } else if connection.awaitsPong, waitingBytes < Self.heldBytesForPong {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The frames that came before the end are still the reader's (an ended connection holds nothing back). Few
        // wait here then: NIO leaves held reads unread after the server's FIN until the reader asks
        // (`compressedFloodThenCloseInBoundedMemory`).
        while !failed, let frame = popWaiting() { handle(context, frame) }
        context.fireChannelInactive()
    }

    private func handle(_ context: ChannelHandlerContext, _ frame: WebSocketFrame) {
        var frame = frame
        // RFC 6455 §5.1 and §5.2: a server masks no frame, and uses no opcode that is not defined.
        if frame.maskKey != nil { return fail(context, MessageFrameError.masked) }
        guard Self.definedOpcodes.contains(frame.opcode) else { return fail(context, MessageFrameError.reservedOpcode(frame.opcode)) }
        if frame.rsv2 || frame.rsv3 { return fail(context, MessageFrameError.reservedBits("RSV2 or RSV3")) }
        if frame.opcode.isControlOpcode {
            if frame.rsv1 { return fail(context, MessageFrameError.reservedBits("RSV1 on a control frame")) }
            return context.fireChannelRead(wrapInboundOut(frame))
        }
        if frame.opcode != .continuation {
            // A message's first frame.
            if frame.rsv1, agreed == nil { return fail(context, MessageFrameError.reservedBits("RSV1 without per-message compression agreed")) }
            inflating = frame.rsv1
            inflated = 0
            heldOpcode = nil
        } else if frame.rsv1 {
            return fail(context, MessageFrameError.reservedBits("RSV1 on a message's later frame"))
        }
        guard inflating, let inflater else { return context.fireChannelRead(wrapInboundOut(frame)) }
        var output = context.channel.allocator.buffer(capacity: 0)
        do {
            try inflater.inflate(frame.unmaskedData, into: &output, limit: maximumMessageSize - inflated)
            if frame.fin {
                // RFC 7692 §7.2.2: the sync flush's end that the sender left off.
                try inflater.inflate(ByteBuffer(bytes: [0x00, 0x00, 0xFF, 0xFF]), into: &output, limit: maximumMessageSize - inflated)
                inflater.endMessage(startsAfresh: agreed?.serverNoContextTakeover == true)
            }
        } catch {
            return fail(context, error)
        }
        inflated += output.readableBytes
        if output.readableBytes == 0, !frame.fin {
            if frame.opcode != .continuation { heldOpcode = frame.opcode }
            return
        }
        let opcode = heldOpcode ?? frame.opcode
        heldOpcode = nil
        frame = WebSocketFrame(fin: frame.fin, opcode: opcode, data: output)
        context.fireChannelRead(wrapInboundOut(frame))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        // Our messages are single frames; control frames are never compressed.
        guard let deflater, frame.fin, frame.opcode == .text || frame.opcode == .binary else {
            return context.write(data, promise: promise)
        }
        let compressed = deflater.compress(frame.data, allocator: context.channel.allocator)
        if agreed?.clientNoContextTakeover == true { deflater.reset() }
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, rsv1: true, opcode: frame.opcode, maskKey: frame.maskKey, data: compressed)),
                      promise: promise)
    }

    /// The opcodes RFC 6455 §5.2 defines; the others are reserved.
    private static let definedOpcodes: [WebSocketOpcode] = [.continuation, .text, .binary, .connectionClose, .ping, .pong]

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        failed = true
        context.fireErrorCaught(error)
    }
}

/// A frame the server sent that breaks the rules of its first bytes: reserved bits or opcodes, or a mask.
enum MessageFrameError: Error, CustomStringConvertible {
    case reservedBits(String)
    case reservedOpcode(WebSocketOpcode)
    case masked

    var description: String {
        switch self {
        case .reservedBits(let what): "the server set a reserved bit: \(what)"
        case .reservedOpcode(let opcode): "the server sent a frame with the reserved opcode \(UInt8(webSocketOpcode: opcode))"
        case .masked: "the server sent a masked frame"
        }
    }
}
