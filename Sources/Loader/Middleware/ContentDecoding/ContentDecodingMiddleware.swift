import FoundationEssentials
import HTTPTypes

/// Asks for compressed bodies and decodes them on the way up: the innermost built-in layer, so every
/// outer layer and the caller see decoded bytes. Settings are ``LoaderSession/Configuration/contentDecoding``.
struct ContentDecodingMiddleware: LoadMiddleware {
    let settings: ContentDecoding

    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await loadSplit(request, context: context, next: next)
    }

    @inline(never)
    fileprivate static func asking(_ request: LoadRequest) -> LoadRequest {
        var request = request
        // Known absent: an append, cheaper than the subscript's search and replace.
        request.headerFields.append(ContentDecoding.acceptEncodingField)
        return request
    }


    @inline(never)
    fileprivate func decoded(_ result: LoadResult) -> LoadResult {
        guard let header = result.response.headerFields[.contentEncoding] else { return result }
        // Codings apply in the order listed, so they are undone from the last; "identity" is no coding.
        let codings = header.split(separator: ",").filter { $0.trimmingSpaces().lowercased() != "identity" }
        let known = codings.compactMap(settings.coding(of:))
        // Anything we cannot undo (zstd, a typo) goes to the caller untouched, header and all; so does a
        // stack deeper than any server sends (curl stops at 5), each layer of which multiplies the expansion.
        guard known.count == codings.count, !known.isEmpty, known.count <= ContentDecoding.deepestStack else { return result }
        var body = result.body
        if let whole = body.whole, let decoded = decodedAtOnce(whole, codings: known) {
            // Came whole and small: decoded here, it goes on whole too, and the caller takes it without reading a stream.
            body = ResponseBody(data: decoded)
        } else {
            // Every layer weighs its output against the bytes that came in, not against the layer below it: a
            // stack of layers each just under the ratio must not expand by the ratio raised to their number.
            let received = ReceivedBytes()
            for (index, coding) in known.reversed().enumerated() {
                let decoded = DecodedBody(encoded: body, coding: coding, url: result.response.url, settings: settings,
                                          received: received, countsReceived: index == 0)
                body = ResponseBody(decoded, wrapping: body)
            }
        }
        var response = result.response
        response.headerFields[.contentEncoding] = nil
        response.headerFields[.contentLength] = nil
        // Ranges count bytes of the encoded body: none of the decoded one can be asked for (a download of it
        // must not be resumed with a Range).
        response.headerFields[.acceptRanges] = nil
        return LoadResult(response: response, body: body, redirectRequest: result.redirectRequest)
    }
}

extension ContentDecodingMiddleware {
    /// The most bytes a body that came whole is decoded to at once; a larger one is decoded as it is read.
    static let atOnceLimit = 256 * 1024

    /// `encoded` with `codings` undone (the last listed first), if every layer decodes cleanly within
    /// ``atOnceLimit`` and the session's limits; `nil` otherwise, and the body is decoded as it is read, which
    /// reports the failure (a corrupt or cut stream, a limit passed) to its reader as before.
    @inline(never)
    fileprivate func decodedAtOnce(_ encoded: Data, codings: [BodyCoding]) -> Data? {
        var bytes = encoded
        for coding in codings.reversed() {
            let decoder = coding.makeDecoder()
            decoder.feed(bytes)
            var output = Data()
            do {
                while let piece = try decoder.nextOutput() {
                    output.append(piece)
                    if output.count > Self.atOnceLimit { return nil }
                }
                try decoder.finish()
            } catch {
                return nil
            }
            if settings.limitPassed(decoded: output.count, received: encoded.count) != nil { return nil }
            bytes = output
        }
        return bytes
    }
}

// Everything is everyday work: asking before, decoding after.
extension ContentDecodingMiddleware: BuiltInLayer {
    func passingDown(_ request: LoadRequest) -> (request: LoadRequest, transforms: Bool) {
        // A caller that chose its own Accept-Encoding wants the bytes as sent, unless the settings say otherwise. A range is of the bytes as sent
        // too (a 206 of a compressed representation is a slice no decoder can start in the middle of), so a
        // request with one asks for no coding, as OkHttp's do, and nothing is decoded.
        guard settings.isEnabled, request.headerFields[.range] == nil else { return (request, false) }
        guard request.headerFields[.acceptEncoding] == nil else { return (request, settings.decodesRequestedCodings) }
        return (Self.asking(request), true)
    }

    func transformed(_ result: LoadResult, sent: LoadRequest?) -> LoadResult {
        // A response that has no body (to HEAD, a 204, a 304) keeps its head as sent: its Content-Length and
        // Content-Encoding tell of the representation, as URLSession and curl -I show them.
        if sent?.method == .head || result.response.status == .noContent || result.response.status == .notModified { return result }
        return decoded(result)
    }
}
