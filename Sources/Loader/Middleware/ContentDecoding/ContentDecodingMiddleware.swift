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
        var result = result
        guard let header = result.response.headerFields[.contentEncoding] else { return result }
        // Codings apply in the order listed, so they are undone from the last; "identity" is no coding.
        let codings = header.split(separator: ",").filter { $0.trimmingSpaces().lowercased() != "identity" }
        let formats = codings.compactMap(settings.format(of:))
        // Anything we cannot undo (br, zstd, a typo) goes to the caller untouched, header and all.
        guard formats.count == codings.count, !formats.isEmpty else { return result }
        var body = result.body
        for format in formats.reversed() {
            body = ResponseBody(DecodedBody(encoded: body, format: format, url: result.response.url, settings: settings), wrapping: body)
        }
        result.body = body
        result.response.headerFields[.contentEncoding] = nil
        result.response.headerFields[.contentLength] = nil
        return result
    }
}

// Everything is everyday work: asking before, decoding after.
extension ContentDecodingMiddleware: BuiltInLayer {
    func passingDown(_ request: LoadRequest) -> (request: LoadRequest, transforms: Bool) {
        // A caller that chose its own Accept-Encoding wants the bytes as sent.
        guard settings.isEnabled, request.headerFields[.acceptEncoding] == nil else { return (request, false) }
        return (Self.asking(request), true)
    }

    func transformed(_ result: LoadResult) -> LoadResult {
        decoded(result)
    }
}
