@testable import HTTPScheme
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTP2
import Testing

/// The handler between NIOHTTP2's HTTP/1 codec and the forwarder, on an embedded channel: what nginx cannot be
/// made to send over HTTP/2 (informational responses), and the streams it tells apart.
@Suite("https: the HTTP/2 stream guard (an embedded channel)")
struct HTTP2StreamGuardTests {
    private func channel(lastProcessed: Int = .max) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HTTP2StreamGuard { lastProcessed })
        return channel
    }

    private func head(_ code: Int) -> HTTPClientResponsePart {
        .head(HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: code)))
    }

    @Test("Informational heads (100, 103) are kept back: the final head, body and end pass as they came")
    func informationalDropped() throws {
        let channel = try channel()
        for part in [head(100), head(103), head(200), .body(ByteBuffer(string: "ok")), .end(nil)] {
            try channel.writeInbound(part)
        }
        var seen: [String] = []
        while let part = try channel.readInbound(as: HTTPClientResponsePart.self) {
            switch part {
            case .head(let head): seen.append("head \(head.status.code)")
            case .body(let body): seen.append("body \(String(buffer: body))")
            case .end: seen.append("end")
            }
        }
        #expect(seen == ["head 200", "body ok", "end"])
    }

    @Test("A stream reset with REFUSED_STREAM, or closed past GOAWAY's last stream, is refused; another reset is not")
    func refusals() throws {
        let cases: [(HTTP2ErrorCode, streamID: Int, lastProcessed: Int, refused: Bool)] = [
            (.refusedStream, 5, .max, true),
            (.cancel, 7, 5, true),
            (.cancel, 5, 5, false),
            (.internalError, 9, 5, false),
        ]
        for (code, streamID, lastProcessed, refused) in cases {
            let channel = try channel(lastProcessed: lastProcessed)
            channel.pipeline.fireErrorCaught(NIOHTTP2Errors.streamClosed(streamID: HTTP2StreamID(streamID), errorCode: code))
            do {
                try channel.throwIfErrorCaught()
                Issue.record("no error passed on for \(code)")
            } catch {
                #expect((error is HTTP2StreamRefused) == refused, "\(code) on stream \(streamID) after GOAWAY's \(lastProcessed): \(error)")
            }
        }
    }

    @Test("A stream that closes before its request's head was written is refused (nothing went out); after the head, a close is the server's")
    func closedBeforeHead() throws {
        let unsent = try channel()
        try unsent.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        unsent.pipeline.fireChannelInactive()
        #expect(throws: HTTP2StreamRefused.self) { try unsent.throwIfErrorCaught() }

        let sent = try channel()
        try sent.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        try sent.writeOutbound(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .POST, uri: "/echo")))
        sent.pipeline.fireChannelInactive()
        #expect(throws: Never.self) { try sent.throwIfErrorCaught() }
    }

    @Test("After the response has started, a reset passes on as it is: the request was processed")
    func afterResponseNotRefused() throws {
        let channel = try channel()
        try channel.writeInbound(head(200))
        channel.pipeline.fireErrorCaught(NIOHTTP2Errors.streamClosed(streamID: HTTP2StreamID(3), errorCode: .refusedStream))
        #expect(throws: NIOHTTP2Errors.StreamClosed.self) { try channel.throwIfErrorCaught() }
    }
}
