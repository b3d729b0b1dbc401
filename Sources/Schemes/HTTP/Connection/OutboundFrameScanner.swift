import NIOCore
import NIOHTTP2

/// Follows the bytes a client writes on an HTTP/2 connection, frame by frame however the writes split them, and
/// finds each `GOAWAY` that carries an error code: a plain value, fed the writes in order.
///
/// NIOHTTP2 answers a connection error of the server's (a malformed frame, a broken rule of the protocol) with such a
/// `GOAWAY` and reports the error exactly as it reports one stream's, and then leaves the connection open; RFC 9113
/// §5.4.1 has the sender close it, which ``ErrorGoAwayCloser`` can do only once it knows that this frame was written.
struct OutboundFrameScanner {
    /// The client's connection preface, before its first frame (RFC 9113 §3.4).
    static let prefaceLength = 24
    /// A frame header's length (RFC 9113 §4.1); its first four bytes hold the payload's length and the frame's type.
    static let headerLength = 9
    /// A `GOAWAY`'s fixed part: the last stream's identifier, then the error code (RFC 9113 §6.8).
    static let goAwayFixedLength = 8
    private static let goAwayType: UInt32 = 0x7

    private enum Part {
        /// Bytes that need no looking at: the preface, or a payload (or its rest).
        case skipping(Int)
        /// A frame header, `seen` bytes of it so far; `start` holds its first four (length and type), big-endian.
        case header(start: UInt32, seen: Int)
        /// A `GOAWAY` payload of `length`, `seen` bytes of it so far; `code` holds the error code's bytes among them.
        case goAway(code: UInt32, seen: Int, length: Int)
        /// Out of step with the frames (a file region where no payload was due): nothing more is found.
        case lost
    }

    private var part = Part.skipping(Self.prefaceLength)

    /// Takes `bytes`, the next written; returns the error code of the last `GOAWAY` with an error whose code they
    /// complete, if any.
    mutating func scan(_ bytes: ByteBuffer) -> HTTP2ErrorCode? {
        let view = bytes.readableBytesView
        var index = view.startIndex
        var found: HTTP2ErrorCode?
        while index < view.endIndex {
            switch part {
            case .skipping(let count):
                // A payload is passed over whole, not a byte at a time.
                let taken = min(count, view.endIndex - index)
                index += taken
                part = taken == count ? .header(start: 0, seen: 0) : .skipping(count - taken)
            case .header, .goAway:
                found = take(view[index]) ?? found
                index += 1
            case .lost:
                return found
            }
        }
        return found
    }

    /// Takes `count` bytes written without being seen (a file region, which NIOHTTP2 writes only as a `DATA` payload).
    mutating func skip(_ count: Int) {
        guard case .skipping(let left) = part, count <= left else {
            if count > 0 { part = .lost }
            return
        }
        part = .skipping(left - count)
    }

    /// Takes one byte of a header or of a `GOAWAY`'s fixed part; returns a completed `GOAWAY`'s error code when it is
    /// not `NO_ERROR`.
    private mutating func take(_ byte: UInt8) -> HTTP2ErrorCode? {
        switch part {
        case .header(var start, let seen):
            if seen < 4 { start = start << 8 | UInt32(byte) }
            guard seen + 1 == Self.headerLength else {
                part = .header(start: start, seen: seen + 1)
                return nil
            }
            let length = Int(start >> 8)
            // A GOAWAY shorter than its fixed part is not ours to judge (NIOHTTP2 writes none).
            part = start & 0xFF == Self.goAwayType && length >= Self.goAwayFixedLength
                ? .goAway(code: 0, seen: 0, length: length) : .skipping(length)
        case .goAway(var code, let seen, let length):
            if seen >= 4 { code = code << 8 | UInt32(byte) }
            guard seen + 1 == Self.goAwayFixedLength else {
                part = .goAway(code: code, seen: seen + 1, length: length)
                return nil
            }
            part = .skipping(length - Self.goAwayFixedLength)
            return code == 0 ? nil : HTTP2ErrorCode(networkCode: Int(code))
        case .skipping, .lost:
            break
        }
        return nil
    }
}
