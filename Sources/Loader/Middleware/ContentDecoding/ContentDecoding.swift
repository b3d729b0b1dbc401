import FoundationEssentials
import HTTPTypes

/// How a session decodes compressed response bodies (`Content-Encoding: gzip`, `deflate`, `br` or `zstd`).
///
/// When decoding is on and a request does not set `Accept-Encoding` itself, the session asks for
/// `gzip, deflate, br, zstd` (URLSession's three, and zstd as curl and browsers ask for it) and hands the caller the decoded body: `Content-Encoding` and `Content-Length` (which
/// described the compressed bytes) are removed from the response; one without a body (to `HEAD`, a `204`, a `304`)
/// keeps them. A request that sets `Accept-Encoding`
/// itself gets the bytes exactly as the server sent them, as with OkHttp.
public struct ContentDecoding: Sendable, Hashable {
    /// Decode gzip, deflate, brotli and zstd, with the default bomb limits.
    public static var automatic: ContentDecoding { ContentDecoding() }
    /// Never ask for or decode compressed bodies.
    public static var off: ContentDecoding {
        var settings = ContentDecoding()
        settings.isEnabled = false
        return settings
    }

    /// Whether the session asks for and decodes compressed bodies.
    public var isEnabled = true
    /// Whether a request that sets its own `Accept-Encoding` has its body decoded too, as curl's `--compressed` with
    /// `-H 'Accept-Encoding: …'` has; off by default, when such a request gets the bytes as sent.
    public var decodesRequestedCodings = false
    /// The most decoded bytes per compressed byte. Past it the load fails with
    /// ``LoadError/Code/dataLengthExceedsMaximum``: a few kilobytes that expand to gigabytes are an attack,
    /// not a resource. Checked only once ``ratioFloor`` decoded bytes have arrived, because a small, very
    /// repetitive body is ordinary, and so is a body whose first megabytes are one run of zeros (its first
    /// compressed kilobytes expand some thousand times, though the whole does not). `nil` for no ratio limit.
    public var maximumRatio: Int? = 200
    /// Decoded bytes below which ``maximumRatio`` is not checked: 16 MiB.
    public var ratioFloor = 16 * 1024 * 1024
    /// The most decoded bytes of one body, whatever the ratio; `nil` for no limit.
    public var maximumDecodedSize: Int?

    /// Makes the default settings: decoding on, at most 200 decoded bytes per compressed byte past 16 MiB.
    public init() {}

    /// The most codings one body may stack and still be decoded (curl stops at 5 too).
    package static let deepestStack = 5
    /// The codings a session decodes, as `Content-Encoding` names them.
    public static let names = ["gzip", "deflate", "br", "zstd"]
    /// The codings this session decodes, in the `Accept-Encoding` it sends.
    static let acceptEncoding = names.joined(separator: ", ")
    /// The field, made once: making one checks its value, on every load.
    static let acceptEncodingField = HTTPField(name: .acceptEncoding, value: acceptEncoding)

    /// Why a body that expanded from `received` compressed bytes to `decoded` bytes passed a limit, or `nil`
    /// if it is within them.
    func limitPassed(decoded: Int, received: Int) -> String? {
        if let maximumDecodedSize, decoded > maximumDecodedSize {
            return "the decoded body passed the limit of \(maximumDecodedSize) bytes"
        }
        if let maximumRatio, decoded > ratioFloor, decoded / max(received, 1) > maximumRatio {
            return "\(received) compressed bytes expanded to over \(decoded): more than \(maximumRatio)× (a decompression bomb?)"
        }
        return nil
    }

    func coding(of name: Substring) -> BodyCoding? {
        switch name.trimmingSpaces().lowercased() {
        case "gzip", "x-gzip": return .gzip
        case "deflate": return .deflate
        case "br": return .brotli
        case "zstd": return .zstd
        default: return nil
        }
    }
}
