import CBrotliEncoder
import CZlib
import CZstd
import Foundation

/// Compresses test bodies with the system's zlib, so tests can serve what real servers send.
public enum Compression {
    /// The framing around deflate data.
    public enum Format: Sendable {
        /// RFC 1952 gzip.
        case gzip
        /// RFC 1950 zlib-wrapped deflate (what `Content-Encoding: deflate` means).
        case zlib
        /// RFC 1951 deflate with no wrapper (what some servers send as `deflate`).
        case raw
    }

    /// `data` compressed whole as brotli (RFC 7932, `Content-Encoding: br`), by libbrotlienc.
    public static func brotli(_ data: Data, quality: Int32 = 5) -> Data {
        var size = BrotliEncoderMaxCompressedSize(data.count) + 64
        var output = Data(count: size)
        let done = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                BrotliEncoderCompress(quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, input.count,
                                      input.baseAddress?.assumingMemoryBound(to: UInt8.self), &size,
                                      out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        precondition(done == BROTLI_TRUE, "brotli could not compress")
        return output.prefix(size)
    }

    /// `parts` compressed as one brotli stream, flushed after each part so that a decoder can give each part whole
    /// before the next arrives (as a server streaming events does): the encoded pieces, one per part, the last
    /// ending the stream.
    public static func brotliFlushed(_ parts: [Data], quality: Int32 = 5) -> [Data] {
        guard let encoder = BrotliEncoderCreateInstance(nil, nil, nil) else { preconditionFailure("brotli could not start") }
        defer { BrotliEncoderDestroyInstance(encoder) }
        precondition(BrotliEncoderSetParameter(encoder, BROTLI_PARAM_QUALITY, UInt32(quality)) == BROTLI_TRUE)
        return parts.enumerated().map { index, part in
            let operation = index == parts.count - 1 ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_FLUSH
            var encoded = Data()
            part.withUnsafeBytes { input in
                var availableIn = input.count
                var nextIn = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                repeat {
                    var availableOut = buffer.count
                    buffer.withUnsafeMutableBufferPointer { out in
                        var nextOut = out.baseAddress
                        precondition(BrotliEncoderCompressStream(encoder, operation, &availableIn, &nextIn, &availableOut, &nextOut, nil) == BROTLI_TRUE)
                    }
                    encoded.append(contentsOf: buffer[0..<(buffer.count - availableOut)])
                } while availableIn > 0 || BrotliEncoderHasMoreOutput(encoder) == BROTLI_TRUE
            }
            return encoded
        }
    }

    /// `data` compressed as one Zstandard frame (RFC 8878, `Content-Encoding: zstd`) by libzstd; `windowLog` sets the
    /// window the frame asks for (libzstd's choice for the level and size if `nil`).
    public static func zstd(_ data: Data, level: Int32 = 3, windowLog: Int32? = nil) -> Data {
        guard let context = ZSTD_createCCtx() else { preconditionFailure("zstd could not start") }
        defer { ZSTD_freeCCtx(context) }
        precondition(ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)) == 0)
        if let windowLog { precondition(ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, windowLog)) == 0) }
        var output = Data(count: ZSTD_compressBound(data.count))
        let capacity = output.count
        let written = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in ZSTD_compress2(context, out.baseAddress, capacity, input.baseAddress, input.count) }
        }
        precondition(ZSTD_isError(written) == 0, "zstd could not compress")
        return output.prefix(written)
    }

    /// `data` compressed whole in `format`.
    public static func compress(_ data: Data, _ format: Format, level: Int32 = 6) -> Data {
        let bits: Int32 = switch format {
        case .gzip: 15 + 16
        case .zlib: 15
        case .raw: -15
        }
        // zlib's state points back at its z_stream, so the stream gets an address of its own.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        precondition(czlib_deflate_init(stream, level, bits) == Z_OK)
        defer {
            deflateEnd(stream)
            stream.deallocate()
        }
        var output = Data(count: Int(deflateBound(stream, uLong(data.count))) + 64)
        let written = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
                stream.pointee.avail_in = uInt(input.count)
                stream.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(out.count)
                precondition(deflate(stream, Z_FINISH) == Z_STREAM_END)
                return out.count - Int(stream.pointee.avail_out)
            }
        }
        return output.prefix(written)
    }
}
