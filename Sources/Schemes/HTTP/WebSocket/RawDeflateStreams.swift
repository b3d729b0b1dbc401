import CZlib
import NIOCore

/// Why a compressed message could not be read.
enum MessageInflateError: Error, CustomStringConvertible {
    /// Its bytes are not deflate data.
    case corrupt(String)
    /// It inflates to more than the largest message taken.
    case tooLarge(limit: Int)

    var description: String {
        switch self {
        case .corrupt(let why): "the compressed message is corrupt (\(why))"
        case .tooLarge(let limit): "a compressed message inflates past the maximum of \(limit) bytes"
        }
    }
}

/// One raw-deflate inflate stream (RFC 7692's messages: no zlib header), kept from message to message unless reset.
/// A class: zlib's state points back at its `z_stream`, which must stay at one address.
final class MessageInflater {
    private let stream: UnsafeMutablePointer<z_stream>
    /// Whether the message's deflate data ended with a block marked final: what follows in the message is no data.
    private var ended = false

    init() throws(MessageInflateError) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard czlib_inflate_init(stream, -15) == Z_OK else {
            stream.deallocate()
            throw .corrupt("zlib could not start")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Inflates `input`, appending to `output`, which may hold at most `limit` bytes: past it, throws without
    /// inflating the rest (a small message may stand for a huge one).
    func inflate(_ input: ByteBuffer, into output: inout ByteBuffer, limit: Int) throws(MessageInflateError) {
        guard input.readableBytes > 0, !ended else { return }
        // Read in place (zlib never writes through `next_in`): a mutable view would copy a buffer still shared.
        let status: Int32? = input.withUnsafeReadableBytes { source -> Int32? in
            stream.pointee.next_in = source.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self)) }
            stream.pointee.avail_in = uInt(source.count)
            defer { (stream.pointee.next_in, stream.pointee.avail_in) = (nil, 0) }
            while stream.pointee.avail_in > 0 {
                let room = min(64 * 1024, limit - output.readableBytes + 1)
                guard room > 0 else { return nil }
                var status: Int32 = Z_OK
                let inputBefore = stream.pointee.avail_in
                var produced = 0
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: room) { target in
                    stream.pointee.next_out = target.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = uInt(room)
                    status = zlib_inflate(stream, Z_SYNC_FLUSH)
                    produced = room - Int(stream.pointee.avail_out)
                    return produced
                }
                if output.readableBytes > limit { return nil }
                // Z_BUF_ERROR: no progress this call, which with input left and room given should not happen; a call that
                // neither read nor wrote a byte ends the loop rather than repeat it.
                if status == Z_BUF_ERROR, produced == 0, stream.pointee.avail_in == inputBefore { return Z_DATA_ERROR }
                guard status == Z_OK || status == Z_BUF_ERROR || status == Z_STREAM_END else { return status }
                if status == Z_STREAM_END {
                    // A block marked final (RFC 7692 §7.2.3.4 allows it) ends the deflate stream: what follows in this
                    // message (the tail appended at its end) is no data, and the next message starts a new stream.
                    ended = true
                    return status
                }
            }
            return Z_OK
        }
        guard let status else { throw .tooLarge(limit: limit) }
        guard status == Z_OK || status == Z_STREAM_END else {
            throw .corrupt(stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)")
        }
    }

    /// Ends a message: the next starts a new deflate stream if this one's ended with a final block, or if
    /// `startsAfresh` (a server that keeps no context between messages); else it goes on with this one's context.
    func endMessage(startsAfresh: Bool) {
        if ended || startsAfresh { inflateReset(stream) }
        ended = false
    }
}

/// One raw-deflate compress stream for our messages, kept from message to message unless reset.
final class MessageDeflater {
    private let stream: UnsafeMutablePointer<z_stream>
    /// The four bytes a sync flush ends with, which RFC 7692 §7.2.1 leaves off the message.
    private static let flushTail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    init?() {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard czlib_deflate_init(stream, Z_DEFAULT_COMPRESSION, -15) == Z_OK else {
            stream.deallocate()
            return nil
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// `message` compressed, as a message's payload: flushed to a byte boundary, without the flush's last four bytes.
    func compress(_ message: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        var output = allocator.buffer(capacity: message.readableBytes / 2 + 64)
        // Read in place, as the inflater does.
        message.withUnsafeReadableBytes { source in
            stream.pointee.next_in = source.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self)) }
            stream.pointee.avail_in = uInt(source.count)
            defer { (stream.pointee.next_in, stream.pointee.avail_in) = (nil, 0) }
            // Until the flush is whole: zlib says so by leaving room in the output.
            repeat {
                let room = max(64, Int(deflateBound(stream, uLong(stream.pointee.avail_in))))
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: room) { target in
                    stream.pointee.next_out = target.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = uInt(room)
                    _ = zlib_deflate(stream, Z_SYNC_FLUSH)
                    return room - Int(stream.pointee.avail_out)
                }
            } while stream.pointee.avail_out == 0
        }
        if output.readableBytesView.suffix(4).elementsEqual(Self.flushTail) {
            output.moveWriterIndex(to: output.writerIndex - 4)
        }
        // zlib writes nothing for a flush right after a flush (an empty message after another): RFC 7692 §7.2.3.6's
        // empty block, one 0x00 byte, stands for it. Sent empty, the receiver would read its own tail as a block.
        if output.readableBytes == 0 { output.writeInteger(UInt8(0)) }
        return output
    }

    /// Starts afresh, as a client that keeps no context between messages must.
    func reset() {
        deflateReset(stream)
    }
}

/// zlib's `inflate` and `deflate` under names of their own: Swift reads the bare names as these types' methods.
private func zlib_inflate(_ stream: UnsafeMutablePointer<z_stream>, _ flush: Int32) -> Int32 { inflate(stream, flush) }
private func zlib_deflate(_ stream: UnsafeMutablePointer<z_stream>, _ flush: Int32) -> Int32 { deflate(stream, flush) }
