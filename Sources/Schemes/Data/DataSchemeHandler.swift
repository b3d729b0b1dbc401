import FoundationEssentials
import HTTPTypes
import Loader

/// The `data:` handler: the WHATWG Fetch data: URL processor, decoded in chunks as the reader takes them.
///
/// The response carries `Content-Type` (the URL's MIME type, serialized) and `Content-Length` (counted in
/// a pass over the encoded text, without decoding it into memory). A malformed URL (no comma, invalid base64) fails with
/// ``LoadError/Code/badURL`` before any response, so a load never ends with a half-delivered body.
public final class DataSchemeHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: no stored state beyond the base class's.

    /// `data`.
    override public class var supportedSchemes: Set<String> { ["data"] }

    /// Decodes the URL and delivers its body in chunks of 256 KiB.
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
        var chunks = dataURL.decodedChunks()
        while let chunk = try chunks.next() {
            try Task.checkCancellation()
            if !chunk.isEmpty { try await client.handler(self, deliver: Data(chunk)) }
        }
    }
}
