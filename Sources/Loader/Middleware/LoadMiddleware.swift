import FoundationEssentials

/// One layer of a session's request chain: redirects, authentication, cookies, caching, decoding, or
/// anything an app adds.
///
/// A middleware receives the request and `next`, the rest of the chain down to the handler. It may
/// rewrite the request before calling `next`, answer without calling it (a cache hit), call it more than
/// once (following a redirect), and transform the result, including its streamed body.
///
/// A layer's own waits (a backoff's `Task.sleep`) end when the load is cancelled, by ``LoadTask/cancel()`` as by the
/// caller's task: the chain runs in a Swift task that both cancel, so such a wait throws `CancellationError`.
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

/// A session's layers, outermost first, ending in the handler dispatch (``LoaderSession/dispatch(_:context:)``).
struct MiddlewareChain: Sendable {
    let layers: [any LoadMiddleware]
    /// The built-in layers at the end of `layers` (all of them from ``firstBuiltIn`` on), run together.
    private let builtIns: [any BuiltInLayer]
    private let firstBuiltIn: Int

    init(layers: [any LoadMiddleware]) {
        self.layers = layers
        // At most 64, one bit each in `passDown`'s mask (a session has four, five with a cookie store).
        var first = layers.count
        while first > 0, layers.count - first < 64, layers[first - 1] is any BuiltInLayer { first -= 1 }
        firstBuiltIn = first
        builtIns = layers[first...].map { $0 as! any BuiltInLayer }
    }

    /// Runs the whole chain. With no layer of the app's, straight into the built-in layers: one async frame
    /// fewer on every load than going through ``run(_:from:context:)``.
    @inline(__always)
    func start(_ request: LoadRequest, context: LoadContext) async throws -> LoadResult {
        guard firstBuiltIn == 0, !builtIns.isEmpty else {
            if firstBuiltIn > 0, context.task.runsInCallersTask { return try await runCancellable(request, context: context) }
            return try await run(request, from: 0, context: context)
        }
        try context.task.checkCancelled(request.url)
        return try await runBuiltIns(request, context: context)
    }

    /// The whole chain in a Swift task of its own that ``LoadTask/cancel()`` cancels, for a load of the async API
    /// through the app's middleware: a layer's own waits (a backoff's sleep) end at the cancel, not after it. The
    /// caller's task, which only awaits this one, cannot be cancelled by the loader (nor should it be: its work goes
    /// on after the load). Only with the app's layers: the built-in ones wait only on what a cancel ends anyway.
    @inline(never)
    private func runCancellable(_ request: LoadRequest, context: LoadContext) async throws -> LoadResult {
        let chain = self
        let child = Task { try await chain.run(request, from: 0, context: context) }
        // The caller's cancellation comes here too: each async entry point cancels the LoadTask when its task is.
        context.task.setCancelMiddleware { child.cancel() }
        defer { context.task.setCancelMiddleware(nil) }
        return try await child.value
    }

    // Out of line: inlined, it and the layer call it makes grew the async frame of every layer that calls it.
    @inline(never)
    func run(_ request: LoadRequest, from index: Int, context: LoadContext) async throws -> LoadResult {
        try context.task.checkCancelled(request.url)
        guard index < layers.count else { return try await LoaderSession.dispatch(request, context: context) }
        if index == firstBuiltIn { return try await runBuiltIns(request, context: context) }
        let next = LoadNext(chain: self, index: index + 1, context: context)
        return try await layers[index].load(request, context: context, next: next)
    }

    /// The built-in layers and the handler, in one async frame: each layer's everyday parts in turn
    /// (``BuiltInLayer``), and a layer's further work, with the ordinary chain below it, only when a
    /// result needs it. What each layer sees and hands on is what its own `load` would.
    // Out of line, and the rarer further work in a function of its own: this frame, allocated on every
    // load, then holds little more than the request and the result.
    @inline(never)
    private func runBuiltIns(_ request: LoadRequest, context: LoadContext) async throws -> LoadResult {
        let (down, transforms) = passDown(request)
        // One result, settled in place: each copy held here would be part of this frame.
        var result = try await LoaderSession.dispatch(down, context: context)
        // `down` is what each layer passed down, as far as the layers below it changed it (`BuiltInLayer`'s `sent`).
        guard let pending = settle(&result, from: builtIns.count, transforms: transforms, sent: down) else { return consume result }
        return try await finish(result, at: pending, request: request, sent: down, transforms: transforms, context: context)
    }

    /// Hands `result` up through the built-in layers below `offset`, innermost first, transforming it
    /// where they asked to; stops at the first layer whose further work it needs, and gives its offset. `sent` is
    /// the request `result` answers, when known.
    @inline(never)
    private func settle(_ result: inout LoadResult, from offset: Int, transforms: UInt64, sent: LoadRequest?) -> Int? {
        var offset = offset
        while offset > 0 {
            offset -= 1
            if transforms & (1 << offset) != 0 { result = builtIns[offset].transformed(result, sent: sent) }
            if builtIns[offset].needsMore(result) { return offset }
        }
        return nil
    }

    /// The further work of the built-in layer at `offset` on `result`, with the ordinary chain below it,
    /// then the layers above it.
    @inline(never)
    private func finish(_ result: LoadResult, at offset: Int, request: LoadRequest, sent: LoadRequest, transforms: UInt64,
                        context: LoadContext) async throws -> LoadResult {
        var result = result
        var pending: Int? = offset
        var sent: LoadRequest? = sent
        while let offset = pending {
            let next = LoadNext(chain: self, index: firstBuiltIn + offset + 1, context: context)
            let received = passDown(request, through: offset).request
            result = try await builtIns[offset].more(result, for: received, sent: sent, context: context, next: next)
            // The result may now answer a request that layer sent itself.
            sent = nil
            pending = settle(&result, from: offset, transforms: transforms, sent: nil)
        }
        return result
    }

    /// `request` as the built-in layer at `offset` receives it (all of them pass it down when `offset` is
    /// their count), with a bit set for each layer on the way that transforms its result.
    @inline(never)
    private func passDown(_ request: LoadRequest, through offset: Int? = nil) -> (request: LoadRequest, transforms: UInt64) {
        var request = request
        var transforms: UInt64 = 0
        for index in 0..<(offset ?? builtIns.count) {
            let (passed, transforming) = builtIns[index].passingDown(request)
            request = passed
            if transforming { transforms |= 1 << index }
        }
        return (request, transforms)
    }
}
