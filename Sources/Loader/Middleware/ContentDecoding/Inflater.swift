import CZlib
import FoundationEssentials

/// One zlib inflate stream: gzip, zlib-wrapped deflate or raw deflate, fed a chunk at a time.
///
/// Output comes in pieces of at most `window` bytes, so a small input that expands enormously (a
/// decompression bomb) never has to be held whole. A class because zlib's state points back at its
/// `z_stream`, which therefore must stay at one address.
final class Inflater: BodyDecoder {
    /// The framing around the deflate data.
    enum Format {
        case gzip
        /// `Content-Encoding: deflate`: RFC 9110 means zlib-wrapped, but some servers send raw deflate;
        /// the first two bytes tell which.
        case deflate
    }


    private let format: Format
    private let output: OutputWindow
    private var stream: UnsafeMutablePointer<z_stream>?
    private var pending = PendingInput()
    /// Whether the last call filled its window, so zlib may hold more output without new input.
    private var outputMayBePending = false
    /// Where the compressed stream is. It ends at its end; bytes after it are ignored, as browsers and curl do,
    /// except that gzip may follow one member with another (concatenated `.gz` files, BGZF): RFC 1952 makes the
    /// members one file, so each is decoded in turn.
    private enum Phase {
        case decoding
        /// A gzip member has just ended; the bytes after it, not all here yet, may start another.
        case betweenMembers
        case finished
    }
    private var phase = Phase.decoding
    /// Whether the compressed stream has ended.
    private var isFinished: Bool { phase == .finished }
    /// Compressed bytes consumed so far.
    private(set) var totalIn = 0
    /// Decoded bytes produced so far.
    private(set) var totalOut = 0

    init(format: Format, window: Int = 64 * 1024) {
        self.format = format
        output = OutputWindow(capacity: window)
    }

    deinit {
        if let stream {
            inflateEnd(stream)
            stream.deallocate()
        }
    }

    /// Adds compressed input; call ``nextOutput()`` until it returns `nil` before adding more. Input after the
    /// stream's end is dropped: kept, it would pile up (and be copied at every feed) for as long as a server sent it.
    func feed(_ data: Data) {
        guard !isFinished else { return }
        pending.append(data)
    }

    /// Decodes the next piece of the input given so far: `nil` when more input is needed or the stream
    /// has ended.
    func nextOutput() throws(DecodingFailure) -> Data? {
        while !isFinished, !pending.isEmpty || outputMayBePending {
            if phase == .betweenMembers {
                guard startsAnotherMember() else { return nil }
                phase = .decoding
            }
            let stream = try self.startIfReady()
            guard let stream else { return nil }
            let out = output.bytes
            let window = output.capacity
            let (status, consumed, produced) = pending.withUnsafeBytes { input in
                let base = input.baseAddress.map { $0.assumingMemoryBound(to: Bytef.self) }
                stream.pointee.next_in = base.map { UnsafeMutablePointer(mutating: $0) }
                stream.pointee.avail_in = uInt(min(input.count, Int(UInt32.max)))
                stream.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(window)
                let availableIn = stream.pointee.avail_in
                let status = inflate(stream, Z_NO_FLUSH)
                return (status, Int(availableIn - stream.pointee.avail_in), window - Int(stream.pointee.avail_out))
            }
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
            pending.advance(by: consumed)
            totalIn += consumed
            totalOut += produced
            outputMayBePending = produced == window
            switch status {
            case Z_STREAM_END where format == .gzip:
                // Another member may follow; what comes next decides (startsAnotherMember).
                phase = .betweenMembers
                outputMayBePending = false
            case Z_STREAM_END:
                phase = .finished
            case Z_OK:
                break
            case Z_BUF_ERROR where consumed == 0 && produced == 0:
                return nil
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .corrupt(message)
            }
            if produced > 0 { return output.copy(produced) }
        }
        return nil
    }

    /// Checks, once the input has ended, that the compressed stream ended too. An empty input is an
    /// empty body, not an error; after a whole gzip member, one stray byte is ignored as any trailing bytes are.
    func finish() throws(DecodingFailure) {
        if phase == .decoding, totalIn > 0 || !pending.isEmpty { throw .truncated }
    }

    /// Between gzip members: whether the bytes after the last one start another (the magic `1f 8b`), which
    /// resets zlib for it. Bytes that do not end the stream (ignored from then on); a lone `1f` waits for more.
    private func startsAnotherMember() -> Bool {
        let (first, second) = (pending.byte(at: 0), pending.byte(at: 1))
        guard first == 0x1F, second == 0x8B || second == nil else {
            phase = .finished
            return false
        }
        guard second != nil, let stream else { return false }
        inflateReset(stream)
        return true
    }

    /// Starts zlib once enough bytes have arrived to tell zlib-wrapped from raw deflate.
    private func startIfReady() throws(DecodingFailure) -> UnsafeMutablePointer<z_stream>? {
        if let stream { return stream }
        let windowBits: Int32
        switch format {
        case .gzip:
            windowBits = 15 + 16
        case .deflate:
            guard let first = pending.byte(at: 0), let second = pending.byte(at: 1) else { return nil }
            // RFC 1950: compression method 8 in the low nibble, and the header a multiple of 31.
            let isZlib = first & 0x0F == 8 && (UInt16(first) << 8 | UInt16(second)) % 31 == 0
            windowBits = isZlib ? 15 : -15
        }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard czlib_inflate_init(stream, windowBits) == Z_OK else {
            stream.deallocate()
            throw .corrupt("zlib could not start")
        }
        self.stream = stream
        return stream
    }
}
