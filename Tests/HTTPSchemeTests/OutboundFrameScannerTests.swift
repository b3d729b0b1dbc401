@testable import HTTPScheme
import NIOCore
import NIOHTTP2
import Testing

/// The scanner that finds a GOAWAY with an error in what the client writes, fed written bytes split every way.
@Suite("http: finding an erroring GOAWAY in the bytes written on an HTTP/2 connection")
struct OutboundFrameScannerTests {
    private static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private static func frame(type: UInt8, stream: UInt32 = 0, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, 0]
            + [UInt8(stream >> 24 & 0xFF), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    private static func goAway(code: UInt32, debug: [UInt8] = []) -> [UInt8] {
        frame(type: 0x7, payload: [0x7F, 0xFF, 0xFF, 0xFF, UInt8(code >> 24), UInt8(code >> 16 & 0xFF), UInt8(code >> 8 & 0xFF), UInt8(code & 0xFF)] + debug)
    }

    /// A DATA frame whose payload spells a GOAWAY with an error, and an empty SETTINGS acknowledgement.
    private static let ordinary = frame(type: 0x4, payload: [0, 0x3, 0, 0, 0, 100]) + frame(type: 0x4, payload: [])
        + frame(type: 0x1, stream: 1, payload: [0x82, 0x86, 0x84]) + frame(type: 0x0, stream: 1, payload: goAway(code: 1))

    /// The error codes `bytes` yield, written in pieces of `size`.
    private func codes(_ bytes: [UInt8], in size: Int) -> [HTTP2ErrorCode] {
        var scanner = OutboundFrameScanner()
        return stride(from: 0, to: bytes.count, by: size).compactMap { start in
            scanner.scan(ByteBuffer(bytes: bytes[start..<min(start + size, bytes.count)]))
        }
    }

    @Test("A GOAWAY with FRAME_SIZE_ERROR after other frames is found once, however the writes split it", arguments: [1, 2, 5, 9, 17, 1000])
    func erroringGoAway(size: Int) {
        let bytes = Self.preface + Self.ordinary + Self.goAway(code: 6, debug: Array("too short".utf8)) + Self.frame(type: 0x6, payload: [UInt8](repeating: 0, count: 8))
        #expect(codes(bytes, in: size) == [.frameSizeError])
    }

    @Test("Frames without an erroring GOAWAY yield nothing: NO_ERROR, a GOAWAY's bytes inside a DATA payload or the preface", arguments: [1, 3, 1000])
    func noError(size: Int) {
        #expect(codes(Self.preface + Self.ordinary + Self.goAway(code: 0), in: size).isEmpty)
    }

    @Test("A file region (a DATA payload written unseen) is skipped: the GOAWAY after it is found; one where no payload was due leaves the scanner finding nothing")
    func fileRegionSkipped() {
        var scanner = OutboundFrameScanner()
        let header = Array(Self.frame(type: 0x0, stream: 1, payload: [UInt8](repeating: 0, count: 4096)).prefix(9))
        #expect(scanner.scan(ByteBuffer(bytes: Self.preface + header)) == nil)
        scanner.skip(4096)
        #expect(scanner.scan(ByteBuffer(bytes: Self.goAway(code: 2))) == .internalError)
        // Out of step, it cannot tell a header from a payload's bytes: better no close than a wrong one.
        scanner.skip(10)
        #expect(scanner.scan(ByteBuffer(bytes: Self.goAway(code: 2))) == nil)
    }
}
