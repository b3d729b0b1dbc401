import CBrotli
import FoundationEssentials

/// One brotli stream (RFC 7932, `Content-Encoding: br`), fed a chunk at a time through libbrotlidec's streaming
/// API; output comes in pieces of at most `window` bytes.
final class BrotliDecoder: BodyDecoder {
    private let state: OpaquePointer?
    private let output: OutputWindow
    private var pending = PendingInput()
    /// Whether the last call filled its window, so the decoder may hold more output without new input.
    private var outputMayBePending = false
    private var isFinished = false
    /// Whether any input came: an empty body is no stream at all, not a truncated one.
    private var receivedInput = false
    private(set) var totalOut = 0

    init(window: Int = 64 * 1024) {
        output = OutputWindow(capacity: window)
        state = BrotliDecoderCreateInstance(nil, nil, nil)
    }

    deinit {
        if let state { BrotliDecoderDestroyInstance(state) }
    }

    func feed(_ data: Data) {
        guard !isFinished, !data.isEmpty else { return }
        receivedInput = true
        pending.append(data)
    }

    func nextOutput() throws(DecodingFailure) -> Data? {
        guard let state else { throw .corrupt("the brotli decoder could not start (out of memory)") }
        while !isFinished, !pending.isEmpty || outputMayBePending {
            let window = output.capacity
            let available = pending.count
            let out = output.bytes
            let (result, consumed, produced) = pending.withUnsafeBytes { input in
                var availableIn = available
                var nextIn: UnsafePointer<UInt8>? = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
                var availableOut = window
                var nextOut: UnsafeMutablePointer<UInt8>? = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
                let result = BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                return (result, available - availableIn, window - availableOut)
            }
            pending.advance(by: consumed)
            totalOut += produced
            // Asked, not inferred from the result: a decoder out of input may still hold decoded bytes (more than
            // the window took) and says it needs more input, and those must not wait for the next chunk.
            outputMayBePending = BrotliDecoderHasMoreOutput(state) == BROTLI_TRUE
            switch result {
            case BROTLI_DECODER_RESULT_SUCCESS:
                // The stream's end: bytes after it are ignored.
                isFinished = true
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT, BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                break
            default:
                throw .corrupt(String(cString: BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state))))
            }
            if produced > 0 { return output.copy(produced) }
            // Nothing taken and nothing given: it waits for input (a guard; the library does not do this otherwise).
            if consumed == 0, !outputMayBePending { return nil }
        }
        return nil
    }

    func finish() throws(DecodingFailure) {
        if receivedInput, !isFinished { throw .truncated }
    }
}
