import CZlib
import Foundation
@testable import HTTPScheme
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// The inflating side of per-message compression, on an embedded channel with NIO's aggregator behind it: frames a
/// real server may send that the websockets package does not.
@Suite("ws: compressed frames a server may send (an embedded channel)")
struct PerMessageDeflateHandlerTests {
    /// `text` as raw deflate data: sync-flushed with the tail left off (`final` false), or ended by a final block.
    private static func deflated(_ text: String, final: Bool) -> [UInt8] {
        var stream = z_stream()
        #expect(czlib_deflate_init(&stream, Z_DEFAULT_COMPRESSION, -15) == Z_OK)
        defer { deflateEnd(&stream) }
        var input = Array(text.utf8)
        var output = [UInt8](repeating: 0, count: 1024 + input.count * 2)
        let produced = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                _ = deflate(&stream, final ? Z_FINISH : Z_SYNC_FLUSH)
                return target.count - Int(stream.avail_out)
            }
        }
        var bytes = Array(output[..<produced])
        if !final, bytes.suffix(4) == [0, 0, 0xFF, 0xFF] { bytes.removeLast(4) }
        return bytes
    }

    /// A channel with the handler (the extension agreed) and NIO's aggregator, as an open socket has them.
    private static func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let connection = WebSocketConnection(channel: channel, url: URL(string: "ws://127.0.0.1/")!, pongPatience: .seconds(60))
        try channel.pipeline.syncOperations.addHandler(PerMessageDeflateHandler(agreed: PerMessageDeflate(), maximumMessageSize: 1 << 20,
                                                                                connection: connection))
        try channel.pipeline.syncOperations.addHandler(NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                                                                                 maxAccumulatedFrameSize: 1 << 20))
        return channel
    }

    private static func text(_ frame: WebSocketFrame?) -> String? {
        frame.map { String(buffer: $0.data) }
    }

    @Test("A message whose first frame inflates to nothing (the deflate data split after one byte) arrives whole, as text")
    func emptyFirstFragment() throws {
        let channel = try Self.channel()
        let bytes = Self.deflated("hello, fragmented world", final: false)
        try channel.writeInbound(WebSocketFrame(fin: false, rsv1: true, opcode: .text, data: ByteBuffer(bytes: bytes.prefix(1))))
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: bytes.dropFirst())))
        let frame = try channel.readInbound(as: WebSocketFrame.self)
        #expect(frame?.opcode == .text)
        #expect(Self.text(frame) == "hello, fragmented world")
        _ = try channel.finish()
    }

    @Test("Messages that end with a final block (BFINAL) each inflate whole: the next starts a new stream, not an empty one")
    func finalBlocks() throws {
        let channel = try Self.channel()
        for text in ["first message", "second message", "third"] {
            try channel.writeInbound(WebSocketFrame(fin: true, rsv1: true, opcode: .text, data: ByteBuffer(bytes: Self.deflated(text, final: true))))
            #expect(Self.text(try channel.readInbound(as: WebSocketFrame.self)) == text)
        }
        _ = try channel.finish()
    }

    @Test("RSV1 on a later frame, or on a control frame, is the server's fault (MessageFrameError)")
    func misplacedReservedBit() throws {
        for frames in [
            [WebSocketFrame(fin: false, opcode: .text, data: ByteBuffer(string: "a")),
             WebSocketFrame(fin: true, rsv1: true, opcode: .continuation, data: ByteBuffer(string: "b"))],
            [WebSocketFrame(fin: true, rsv1: true, opcode: .ping, data: ByteBuffer(string: "p"))],
        ] {
            let channel = try Self.channel()
            #expect(throws: MessageFrameError.self) {
                for frame in frames { try channel.writeInbound(frame) }
            }
            _ = try? channel.finish()
        }
    }
}
