import FoundationEssentials

/// A content coding the session decodes (`Content-Encoding`), and the decoder for one body in it.
enum BodyCoding: Sendable {
    /// RFC 1952 gzip (`gzip`, `x-gzip`).
    case gzip
    /// `deflate`: zlib-wrapped, or raw as some servers send it.
    case deflate
    /// RFC 7932 brotli (`br`).
    case brotli
    /// RFC 8878 Zstandard (`zstd`), windows up to 8 MiB (RFC 9659).
    case zstd

    /// A decoder for one body.
    func makeDecoder() -> any BodyDecoder {
        switch self {
        case .gzip: Inflater(format: .gzip)
        case .deflate: Inflater(format: .deflate)
        case .brotli: BrotliDecoder()
        case .zstd: ZstdDecoder()
        }
    }
}

/// One body's decoder, fed a chunk at a time, giving its output in pieces of bounded size so that a small
/// input that expands enormously (a decompression bomb) never has to be held whole.
protocol BodyDecoder: AnyObject {
    /// Adds compressed input; call ``nextOutput()`` until it returns `nil` before adding more. Input after the
    /// compressed stream's end is dropped.
    func feed(_ data: Data)
    /// Decodes the next piece of the input given so far: `nil` when more input is needed or the stream has ended.
    func nextOutput() throws(DecodingFailure) -> Data?
    /// Checks, once the input has ended, that the compressed stream ended too (an empty input is an empty body).
    func finish() throws(DecodingFailure)
    /// Decoded bytes produced so far.
    var totalOut: Int { get }
}

/// Why a body could not be decoded.
enum DecodingFailure: Error, Equatable {
    /// The decoder rejected the data; its message.
    case corrupt(String)
    /// The input ended before the compressed stream did.
    case truncated
}
