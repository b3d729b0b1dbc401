import FoundationEssentials

/// A built-in layer (redirects, authentication, content decoding) split into the work every load needs,
/// which has no await of its own, and the work only some results need: a redirect to follow, a challenge to
/// answer.
///
/// ``MiddlewareChain`` runs the session's trailing built-in layers together in one async function, which
/// calls each layer's everyday parts in turn around the handler and takes a layer's ``more(_:for:context:next:)``
/// only when ``needsMore(_:)`` says so. Called one by one, each layer cost three async frames on every load
/// (the chain's step, the protocol witness, `load`), allocated from the load's task: a task made for one
/// load (as for requests run concurrently) then needed several more kilobyte-sized slabs from `malloc`.
///
/// A layer's own `load` must do exactly what the split parts do, in this order: ``passingDown(_:)``, the
/// rest of the chain, ``transformed(_:sent:)`` if asked for, then ``more(_:for:sent:context:next:)`` if needed.
///
/// `sent`, given to both, is the request this layer passed down as the layers below it changed it (none of them
/// sets `Authorization`), when the chain knows that `result` answers it; `nil` after another layer's further work,
/// which may have sent a request of its own.
protocol BuiltInLayer: LoadMiddleware {
    /// The request this layer passes to the layers below, and whether it must transform their result.
    func passingDown(_ request: LoadRequest) -> (request: LoadRequest, transforms: Bool)
    /// The result as this layer hands it up, when ``passingDown(_:)`` asked to transform it.
    func transformed(_ result: LoadResult, sent: LoadRequest?) -> LoadResult
    /// Whether `result` needs more than the everyday work: a redirect to follow, a challenge to answer.
    func needsMore(_ result: LoadResult) -> Bool
    /// That further work, for the `request` this layer received; `next` runs the layers below it.
    func more(_ result: LoadResult, for request: LoadRequest, sent: LoadRequest?, context: LoadContext, next: LoadNext) async throws -> LoadResult
}

extension BuiltInLayer {
    /// The request unchanged: most layers only look at results.
    func passingDown(_ request: LoadRequest) -> (request: LoadRequest, transforms: Bool) { (request, false) }
    /// The result unchanged.
    func transformed(_ result: LoadResult, sent: LoadRequest?) -> LoadResult { result }
    /// No further work: for a layer whose work is all everyday.
    func needsMore(_ result: LoadResult) -> Bool { false }
    /// Never called when ``needsMore(_:)`` is always `false`: the result as it is.
    func more(_ result: LoadResult, for request: LoadRequest, sent: LoadRequest?, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        result
    }

    /// The split parts, run as one layer of an ordinary chain.
    func loadSplit(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        let (down, transforms) = passingDown(request)
        var result = try await next(down)
        if transforms { result = transformed(result, sent: down) }
        guard needsMore(result) else { return result }
        return try await more(result, for: request, sent: down, context: context, next: next)
    }
}
