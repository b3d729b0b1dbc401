import NIOCore
import NIOHTTP2

/// Follows the bytes a client writes on an HTTP/2 connection, frame by frame however the writes split them, and
/// finds each `GOAWAY` that carries an error code: a plain value, fed the writes in order.
///
/// NIOHTTP2 answers a connection error of the server's (a malformed frame, a broken rule of the protocol) with such a
/// `GOAWAY` and reports the error exactly as it reports one stream's, and then leaves the connection open; RFC 9113
/// §5.4.1 has the sender close it, which the pool can do only once it knows that this frame went out.
struct OutboundFrameScanner {
    /// The client's connection preface, before its first frame (RFC 9113 §3.4).
    static let prefaceLength = 24
    /// A frame header's length (RFC 9113 §4.1).
    static let headerLength = 9
    /// A `GOAWAY`'s fixed part: the last stream's identifier, then the error code (RFC 9113 §6.8).
    static let goAwayFixedLength = 8
    private static let goAwayType: UInt8 = 0x7

    private enum Part {
        /// Bytes that need no looking at: the preface, or a payload (or its rest).
        case skipping(Int)
        /// A frame header's first bytes.
        case header([UInt8])
        /// A `GOAWAY` payload's first bytes, of a payload of `length`.
        case goAway([UInt8], length: Int)
    }

    private var part = Part.skipping(Self.prefaceLength)

    /// Takes `bytes`, the next written; returns the error code of the last `GOAWAY` with an error whose code they
    /// complete, if any.
    mutating func scan(_ bytes: ByteBuffer) -> HTTP2ErrorCode? {
        var rest = bytes.readableBytesView[...]
        var found: HTTP2ErrorCode?
        while !rest.isEmpty {
            switch part {
            case .skipping(let count):
                let taken = min(count, rest.count)
                rest = rest.dropFirst(taken)
                part = .skipping(count - taken)
            case .header(var header):
                let taken = rest.prefix(Self.headerLength - header.count)
                header += taken
                rest = rest.dropFirst(taken.count)
                part = .header(header)
            case .goAway(var fixed, let length):
                let taken = rest.prefix(Self.goAwayFixedLength - fixed.count)
                fixed += taken
                rest = rest.dropFirst(taken.count)
                part = .goAway(fixed, length: length)
            }
            found = advance() ?? found
        }
        return found
    }

    /// Takes `count` bytes written without being seen (a file region, which NIOHTTP2 writes only as a `DATA` payload).
    mutating func skip(_ count: Int) {
        guard case .skipping(let left) = part else { return }
        part = .skipping(max(0, left - count))
        advanceAfterSkipping()
    }

    /// Moves past a completed part; returns a completed `GOAWAY`'s error code when it is not `NO_ERROR`.
    private mutating func advance() -> HTTP2ErrorCode? {
        switch part {
        case .skipping(0):
            part = .header([])
        case .header(let header) where header.count == Self.headerLength:
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            // A GOAWAY shorter than its fixed part is not ours to judge (NIOHTTP2 writes none).
            part = header[3] == Self.goAwayType && length >= Self.goAwayFixedLength ? .goAway([], length: length) : .skipping(length)
        case .goAway(let fixed, let length) where fixed.count == Self.goAwayFixedLength:
            part = length == Self.goAwayFixedLength ? .header([]) : .skipping(length - Self.goAwayFixedLength)
            let code = fixed[4...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return code == 0 ? nil : HTTP2ErrorCode(networkCode: Int(code))
        default:
            break
        }
        return nil
    }

    /// A payload skipped to its end leaves the next header to come.
    private mutating func advanceAfterSkipping() {
        if case .skipping(0) = part { part = .header([]) }
    }
}
