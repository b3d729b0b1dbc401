import CZstd
import FoundationEssentials

/// A Zstandard body (RFC 8878, `Content-Encoding: zstd`: one or more frames), fed a chunk at a time through libzstd's
/// streaming API; output comes in pieces of at most `window` bytes. A frame that asks for a window over 8 MiB is
/// refused as corrupt, as RFC 9659 lets a decoder do, so that a server cannot make one body hold gigabytes of
/// history. Only RFC 8878 frames (and skippable ones) are taken: libzstd also reads the formats before 1.0, whose
/// decoders do not apply that limit.
final class ZstdDecoder: BodyDecoder {
    /// RFC 9659's limit for the `zstd` coding: 2^23 bytes.
    static let maximumWindowLog: Int32 = 23

    private let context: OpaquePointer?
    private let output: OutputWindow
    private var pending = PendingInput()
    /// Whether the last call filled its window, so the decoder may hold more output without new input.
    private var outputMayBePending = false
    /// Whether the input so far ends where a frame does: the next bytes, if any, start a frame, whose magic number
    /// is checked before libzstd sees it.
    private var atFrameEnd = true
    /// Whether any input came: an empty body is no frame at all, not a truncated one.
    private var receivedInput = false
    private(set) var totalOut = 0

    init(window: Int = 64 * 1024) {
        output = OutputWindow(capacity: window)
        context = ZSTD_createDCtx()
        if let context { _ = ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, Self.maximumWindowLog) }
    }

    deinit {
        if let context { ZSTD_freeDCtx(context) }
    }

    func feed(_ data: Data) {
        guard !data.isEmpty else { return }
        receivedInput = true
        pending.append(data)
    }

    func nextOutput() throws(DecodingFailure) -> Data? {
        guard let context else { throw .corrupt("the zstd decoder could not start (out of memory)") }
        while !pending.isEmpty || outputMayBePending {
            if atFrameEnd, !outputMayBePending {
                // A frame starts: its magic number first (RFC 8878 §3.1.1; §3.1.2 for skippable frames).
                guard pending.count >= 4 else { return nil }
                let magic = pending.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }.littleEndian
                guard magic == 0xFD2F_B528 || magic & 0xFFFF_FFF0 == 0x184D_2A50 else {
                    throw .corrupt("zstd: not a Zstandard frame (its magic number is 0x\(String(magic, radix: 16)))")
                }
            }
            let window = output.capacity
            let available = pending.count
            let out = output.bytes
            let (result, consumed, produced) = pending.withUnsafeBytes { input in
                var source = ZSTD_inBuffer(src: input.baseAddress, size: available, pos: 0)
                var destination = ZSTD_outBuffer(dst: out.baseAddress, size: window, pos: 0)
                let result = ZSTD_decompressStream(context, &destination, &source)
                return (result, source.pos, destination.pos)
            }
            if ZSTD_isError(result) != 0 {
                if ZSTD_getErrorCode(result) == ZSTD_error_frameParameter_windowTooLarge {
                    throw .corrupt("a zstd frame asks for a window over 8 MiB, more than RFC 9659 lets a server use")
                }
                throw .corrupt("zstd: " + String(cString: ZSTD_getErrorName(result)))
            }
            pending.advance(by: consumed)
            totalOut += produced
            // 0: the frame is decoded and flushed (another may follow in the same body). Otherwise a full output
            // buffer may leave decoded bytes inside the decoder: libzstd asks to be called again.
            outputMayBePending = produced == window && result != 0
            if consumed > 0 || produced > 0 { atFrameEnd = result == 0 }
            if produced > 0 { return output.copy(produced) }
            // Nothing taken and nothing given: it waits for input (a guard; the library does not do this otherwise).
            if consumed == 0 { return nil }
        }
        return nil
    }

    func finish() throws(DecodingFailure) {
        // A frame begun, or the start of one's magic number left over.
        if receivedInput, !atFrameEnd || !pending.isEmpty { throw .truncated }
    }
}
