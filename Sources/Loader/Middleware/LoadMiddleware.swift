import FoundationEssentials

/// One layer of a session's request chain: redirects, authentication, cookies, caching, decoding, or
/// anything an app adds.
///
/// A middleware receives the request and `next`, the rest of the chain down to the handler. It may
/// rewrite the request before calling `next`, answer without calling it (a cache hit), call it more than
/// once (following a redirect), and transform the result, including its streamed body.
///
/// ```swift
/// struct UserAgent: LoadMiddleware {
///     func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
///         var request = request
///         request.headerFields[.userAgent] = "demo/1.0"
///         return try await next(request)
///     }
/// }
/// ```
public protocol LoadMiddleware: Sendable {
    /// Handles `request`, usually by calling `next` and returning or transforming its result.
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult
}

/// What a middleware knows about the load it takes part in.
public struct LoadContext: Sendable {
    /// The session running the load.
    public let session: LoaderSession
    /// The task the load belongs to.
    public let task: LoadTask
}

/// The rest of the chain below a middleware. Call it to pass a request on.
public struct LoadNext: Sendable {
    let chain: MiddlewareChain
    let index: Int
    let context: LoadContext

    /// Loads `request` through the remaining layers and the handler.
    public func callAsFunction(_ request: LoadRequest) async throws -> LoadResult {
        try await chain.run(request, from: index, context: context)
    }
}

/// A session's layers, outermost first, ending in the handler dispatch.
struct MiddlewareChain: Sendable {
    let layers: [any LoadMiddleware]
    let dispatch: @Sendable (LoadRequest, LoadContext) async throws -> LoadResult

    // Out of line: inlined, it and the layer call it makes grew the async frame of every layer that calls it.
    @inline(never)
    func run(_ request: LoadRequest, from index: Int, context: LoadContext) async throws -> LoadResult {
        try context.task.checkCancelled(request.url)
        guard index < layers.count else { return try await dispatch(request, context) }
        let next = LoadNext(chain: self, index: index + 1, context: context)
        return try await layers[index].load(request, context: context, next: next)
    }
}
