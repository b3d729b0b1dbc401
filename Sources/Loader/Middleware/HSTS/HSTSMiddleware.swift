import FoundationEssentials
import HTTPTypes

/// HTTP Strict Transport Security (RFC 6797): an `http` request to a host its store (``HSTSStore``) knows goes as
/// `https` instead (port 80, when written, as 443; any other port kept), and each `Strict-Transport-Security` field
/// of a response that came over HTTPS is given to the store. One over plain HTTP is ignored, as the RFC asks.
///
/// Below redirects (each hop is upgraded on its own) and above authentication, cookies and the cache, which then see
/// the `https` URL the request goes to. The response's URL is the `https` one.
struct HSTSMiddleware: LoadMiddleware {
    let store: HSTSStore

    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        try await loadSplit(request, context: context, next: next)
    }
}

// Everyday work only: the scheme checked on the way down, one field read from an HTTPS response on the way up.
extension HSTSMiddleware: BuiltInLayer {
    func passingDown(_ request: LoadRequest) -> (request: LoadRequest, transforms: Bool) {
        switch request.scheme {
        case "https":
            return (request, true)
        case "http":
            // secureURL looks at the store's count first, without a lock or a parse of the host: most sessions hold none.
            guard let secure = store.secureURL(for: request.url) else { return (request, false) }
            var request = request
            request.url = secure
            return (request, true)
        default:
            return (request, false)
        }
    }

    func transformed(_ result: LoadResult, sent: LoadRequest?) -> LoadResult {
        store.record(from: result.response)
        return result
    }
}
