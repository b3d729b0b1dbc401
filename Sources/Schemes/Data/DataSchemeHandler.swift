import FoundationEssentials
import HTTPTypes
import Loader

/// The `data:` handler: the WHATWG Fetch data: URL processor. A body up to 16 MiB is decoded in one piece; a
/// larger one in chunks as the reader takes them.
///
/// The response carries `Content-Type` (the URL's MIME type, serialized) and `Content-Length` (counted in
/// a pass over the encoded text, without decoding it into memory). A malformed URL (no comma, invalid base64) fails with
/// ``LoadError/Code/badURL`` before any response, so a load never ends with a half-delivered body.
public final class DataSchemeHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: no stored state beyond the base class's.

    /// `data`.
    override public class var supportedSchemes: Set<String> { ["data"] }
    /// No origin a cache could spare: loads go ahead under ``CachePolicy/returnCacheDataDontLoad``.
    override public class var reachesOrigin: Bool { false }

    /// Bodies up to this size are decoded in one piece: the URL's text already takes a third more memory
    /// than the body, and a reader collecting the body then keeps that piece as it is, uncopied.
    static let wholeBodyLimit = 16 << 20

    /// Decodes the URL and delivers its body: whole up to ``wholeBodyLimit``, in chunks of about 256 KiB
    /// beyond it, decoded as the reader takes them.
    @concurrent override public func load() async throws {
        let url = request.url
        let dataURL: DataURL
        do {
            dataURL = try DataURL.parse(url)
        } catch {
            throw LoadError(.badURL, url: url, reason: error.description, underlying: error)
        }
        let length = Int64(dataURL.expectedLength)
        client.handler(self, didReceive: LoadResponse(url: url, mimeType: dataURL.mimeType.description, expectedContentLength: length))
        guard request.method != .head else { return }
        var chunks = dataURL.expectedLength <= Self.wholeBodyLimit ? dataURL.decodedChunks(maxChunkBytes: .max) : dataURL.decodedChunks()
        while let chunk = try chunks.nextData() {
            try Task.checkCancellation()
            if !chunk.isEmpty { try await client.handler(self, deliver: chunk) }
        }
    }
}
