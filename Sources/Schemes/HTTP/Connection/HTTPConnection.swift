import FoundationEssentials
import Loader
import NIOCore
import NIOHTTP1
import Synchronization

/// One HTTP/1.1 connection, or one stream of an HTTP/2 connection: a channel whose pipeline ends in a
/// ``ResponseForwarder``.
final class HTTPConnection: Sendable {
    let channel: any Channel
    let key: ConnectionPool.Key
    private let forwarder: NIOLoopBound<ResponseForwarder>
    /// When the connection last went idle (uptime nanoseconds), or 0 while leased.
    let idleSince = Atomic<UInt64>(0)
    /// Whether an idle timer is pending for this connection.
    let idleTimerArmed = Atomic<Bool>(false)
    private let poolBox = Locked<ConnectionPool?>(nil)
    private var pool: ConnectionPool? { poolBox.withLock { $0 } }

    /// For a stream of an HTTP/2 connection: that connection. A stream carries one request and is never idle.
    let multiplexedOn: HTTP2Connection?
    /// For a stream: whether the pool has counted its end.
    private let streamDone = Atomic<Bool>(false)

    /// How the connection opened (for an HTTP/2 stream, its connection), told with the first exchange's metrics.
    let record: ConnectionRecord?

    init(channel: any Channel, key: ConnectionPool.Key, forwarder: ResponseForwarder, multiplexedOn: HTTP2Connection? = nil,
         record: ConnectionRecord? = nil) {
        self.record = record
        self.channel = channel
        self.key = key
        self.forwarder = NIOLoopBound(forwarder, eventLoop: channel.eventLoop)
        self.multiplexedOn = multiplexedOn
    }

    /// Marks a stream's end as counted; `false` if it was already (a response's end, then the stream's close).
    func endStream() -> Bool {
        !streamDone.exchange(true, ordering: .acquiringAndReleasing)
    }

    var isActive: Bool { channel.isActive }

    /// Tells `pool` when a response ends and when the connection closes. Call on the event loop, once.
    func attach(to pool: ConnectionPool) {
        poolBox.withLock { $0 = pool }
        // Strong references: the forwarder drops both closures when the connection closes, which breaks
        // the cycle (weak ones would slow every retain and release of the connection and the pool).
        forwarder.value.onResponseEnd = { [self] reusable in
            pool.release(self, reusable: reusable)
        }
        forwarder.value.onClose = { [self] in
            pool.connectionClosed(self)
        }
    }

    /// Sends the request and waits for the end of its response, whose events go to the exchange's client.
    ///
    /// The request counts as sent (so the connection may be reused) once its last part is written: with the
    /// last body byte for a `Content-Length` body, the terminating chunk for a chunked one. That moment is
    /// recorded on the event loop as the write completes, before any later read of the response's end. A
    /// server may answer before the body is all sent; then sending stops at once and the response stands.
    /// `done` is the future the exchange's end completes.
    func execute(_ exchange: HTTPExchange, head: HTTPRequestHead, body: RequestBody?, done: EventLoopFuture<Void>) async throws {
        guard let body else {
            // Waits on `done` from a callback registered on the loop, in the trip that sends: registering
            // on the future from another thread would be a trip of its own.
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                send(exchange, head: head) { done.whenComplete { waiter.resume(with: $0) } }
            }
            return
        }
        let forwarder = self.forwarder
        try await channel.eventLoop.submit { try forwarder.value.start(exchange) }.get()
        // The body is read and sent by a task of its own, which the exchange's end stops: a server that answers
        // before the body is all sent (a 401, a 413) ends the load then, not at the body stream's next chunk,
        // which may be long in coming.
        let sending = Task { try await self.sendBody(body, of: exchange, head: head, done: done) }
        done.whenComplete { _ in sending.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await sending.value
            } onCancel: {
                sending.cancel()
            }
        } catch where exchange.endReported {
            // Stopped by the exchange's end, or failed with it: the exchange's own result stands.
        }
        try await done.get()
    }

    /// The most body bytes written at once, and the size of the chunks a file or a buffer is read in.
    static let largestWrite = 256 * 1024
    /// The request body bytes between two reports of upload progress (curl's upload buffer, 64 KiB): a request
    /// timeout of a minute then ends an upload only below about 1 KB/s.
    static let progressStep = 64 * 1024

    /// Writes the head and the body, and returns once the body stream has ended (or was stopped) with all of it
    /// written, or the response has ended. Throws when
    /// the body fails or gives other than its announced length, or when it was stopped (a cancel, the exchange's
    /// failure): a stream stopped early must never go out as the body's end.
    ///
    /// The request's end is written with its last bytes, in one trip, and the request counts as sent (its
    /// connection reusable) once that write completes. Written apart, a response that ended in between gave the
    /// connection back to the pool first, and the end could go out in the middle of the next request on it.
    private func sendBody(_ body: RequestBody, of exchange: HTTPExchange, head: HTTPRequestHead, done: EventLoopFuture<Void>) async throws {
        let loop = channel.eventLoop
        let channel = self.channel
        let contentLength = head.headers.first(name: "content-length").flatMap { Int64($0) }
        var endWritten = false
        if contentLength == 0 {
            let written = loop.makePromise(of: Void.self)
            written.futureResult.whenSuccess { exchange.markRequestSent() }
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: written)
            endWritten = true
        } else if case .stream = body {
            // Out at once: the stream's first chunk may be long in coming (a live source, a busy task pool), and a
            // server that answers on the head (a 401, a 413) must see it meanwhile.
            channel.writeAndFlush(HTTPClientRequestPart.head(head), promise: nil)
        } else {
            // With the first chunk, in one write: a file's or a buffer's bytes are at hand.
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
        }
        let expected = body.knownLength
        var sent: Int64 = 0
        for try await chunk in body.chunks(chunkSize: Self.largestWrite) {
            // Nothing to send: an empty chunk after the last bytes would otherwise write the end a second time.
            if chunk.isEmpty { continue }
            // Never past the announced length: the extra bytes would reach the server as the start of another
            // request (a file that grew since its size was read, a stream that gave more than it said). If the
            // server has answered already, it had the request as announced: sending simply stops.
            if let contentLength, sent + Int64(chunk.count) > contentLength {
                if exchange.responseEnded { return }
                throw failing(exchange, LoadError(.requestBodyStreamExhausted, url: exchange.url,
                                                  reason: "the request body gave more than its announced \(contentLength) bytes"))
            }
            // A stream's chunk may be of any size: it goes out in pieces no larger than a file's chunks, each told as
            // sent once written, so that progress (and the idle request timeout it resets) moves while a large chunk
            // goes out, not once at its end.
            var rest = chunk
            while !rest.isEmpty {
                let piece = rest.prefix(Self.largestWrite)
                rest = rest.dropFirst(piece.count)
                // Each step of the piece is told as written: over a link slower than a piece per request timeout (256 KiB
                // a minute) the upload would otherwise look idle while it went out.
                let lastStep = piece.dropFirst((piece.count - 1) / Self.progressStep * Self.progressStep)
                var stepStart = piece.startIndex
                while stepStart < lastStep.startIndex {
                    let step = piece[stepStart..<stepStart + Self.progressStep]
                    stepStart = step.endIndex
                    sent += Int64(step.count)
                    let stepWritten = loop.makePromise(of: Void.self)
                    Self.tellProgress(when: stepWritten.futureResult, total: sent, of: exchange, expected: expected)
                    channel.write(HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: step))), promise: stepWritten)
                }
                sent += Int64(lastStep.count)
                let written = loop.makePromise(of: Void.self)
                Self.tellProgress(when: written.futureResult, total: sent, of: exchange, expected: expected)
                let part = HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: lastStep)))
                if let contentLength, sent == contentLength {
                    written.futureResult.whenSuccess { exchange.markRequestSent() }
                    channel.write(part, promise: nil)
                    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: written)
                    endWritten = true
                } else {
                    channel.writeAndFlush(part, promise: written)
                }
                // Waiting for each write keeps a fast body from piling up in memory ahead of the socket.
                do {
                    try await written.futureResult.get()
                } catch {
                    if exchange.responseEnded { return }
                    throw await cause(of: error, in: exchange, done: done)
                }
                if exchange.responseEnded { return }
            }
        }
        if exchange.responseEnded { return }
        if Task.isCancelled || exchange.endReported { throw CancellationError() }
        if let announced = contentLength ?? expected, sent != announced {
            throw failing(exchange, LoadError(.requestBodyStreamExhausted, url: exchange.url,
                                              reason: "the request body gave \(sent) of its announced \(announced) bytes"))
        }
        guard !endWritten else { return }
        let ended = loop.makePromise(of: Void.self)
        ended.futureResult.whenSuccess { exchange.markRequestSent() }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: ended)
        do {
            try await ended.futureResult.get()
        } catch {
            if !exchange.responseEnded { throw await cause(of: error, in: exchange, done: done) }
        }
    }

    /// Tells `total` request body bytes as sent once `written` succeeds: from the event loop, where the response's
    /// events come from too, so that the handler's calls to its client never overlap; and not after the response has
    /// ended, which may already have ended the load, nor after the exchange failed.
    private static func tellProgress(when written: EventLoopFuture<Void>, total: Int64, of exchange: HTTPExchange, expected: Int64?) {
        written.whenSuccess {
            guard !exchange.responseEnded, !exchange.endReported else { return }
            exchange.client.handler(exchange.handler, didSendBodyData: total, totalBytesExpectedToSend: expected)
        }
    }

    /// Fails `exchange` with `error` and gives up the connection (the request went out other than announced), and
    /// returns the error to throw. Both on the event loop, as ``abandon(_:)`` does, and only if the response has not
    /// ended there: a response that ended first stands (the loop reports it whole), and a connection whose response
    /// ended may already carry the next request.
    private func failing(_ exchange: HTTPExchange, _ error: LoadError) -> LoadError {
        channel.eventLoop.execute { [self] in _ = letGo(exchange, failing: error) }
        return error
    }

    /// What to report for a write that failed: the exchange's own failure if it had one. A malformed response
    /// or a TLS alert fails the exchange and closes the connection, and the write still pending then fails
    /// with a bare "closed" that would hide the cause (and let a request be retried as if the server had
    /// merely dropped an idle connection).
    ///
    /// On an HTTP/2 stream a write fails only when the stream has closed, and its closing ends the exchange
    /// just after (with the reason: a stream the server's GOAWAY left out may be sent again), so it is always
    /// waited for there.
    ///
    /// `done` must be the future the exchange's end completes (an upload's exchange always reports to one;
    /// a fast-path exchange, which reports to its handler, never uploads), or this would wait forever.
    private func cause(of writeError: any Error, in exchange: HTTPExchange, done: EventLoopFuture<Void>) async -> any Error {
        guard exchange.endReported || multiplexedOn != nil else { return writeError }
        do {
            try await done.get()
            return writeError
        } catch {
            return error
        }
    }

    /// Starts a bodiless request: makes `exchange` current and writes the head, in one trip to the event
    /// loop (none if already on it: each hop between threads costs wake-ups). The exchange reports its end.
    /// `onLoop` runs on the loop first, in the same trip.
    func send(_ exchange: HTTPExchange, head: HTTPRequestHead, onLoop: (@Sendable () -> Void)? = nil) {
        if channel.eventLoop.inEventLoop {
            start(exchange, head: head, onLoop: onLoop)
        } else {
            channel.eventLoop.execute { [self] in start(exchange, head: head, onLoop: onLoop) }
        }
    }

    /// What ``send(_:head:onLoop:)`` does on the event loop.
    private func start(_ exchange: HTTPExchange, head: HTTPRequestHead, onLoop: (@Sendable () -> Void)?) {
        onLoop?()
        do {
            try forwarder.value.start(exchange)
        } catch {
            exchange.fail(error)
            return
        }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        // No write promise (two allocations per request): a bodiless request is all sent once the channel
        // holds none of it, which the forwarder checks when the response ends (``HTTPExchange/isSent(buffered:)``).
        exchange.markBodiless()
    }

    /// Bytes written to `channel` but not yet to its socket (call on the event loop); `Int.max` if the
    /// channel cannot tell.
    static func bufferedBytes(of channel: any Channel) -> Int {
        (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? Int.max
    }

    func close() {
        // A stream closed while still open is reset (RST_STREAM): counted on its connection.
        if let multiplexedOn, channel.isActive { multiplexedOn.resetStreams.add(1, ordering: .relaxed) }
        channel.close(promise: nil)
    }

    /// Resets this HTTP/2 stream if it is still open once the event loop is done with what it is reading now. By
    /// then NIOHTTP2 has closed a stream whose request and response both ended; closed before that, at the
    /// response's end, such a stream was reset too (`RST_STREAM` with `CANCEL`): one frame, TLS record and write
    /// more on every request, which a server guarding against rapid resets counts against the connection.
    func resetStreamIfOpen() {
        channel.eventLoop.execute { [self] in
            if channel.isActive { close() }
        }
    }

    /// Gives up on `exchange` (cancelled, or failed or ended already): on the event loop, unless the response had ended
    /// (the connection then went back to the pool and may now carry another request), fails the exchange as
    /// cancelled and closes the connection. The check runs on the loop, where the end of a response is
    /// recorded, so it cannot race with it. An end already seen needs no trip there: it is never undone (and
    /// every load that ends normally stops its handler, which abandons the exchange, after its end).
    func abandon(_ exchange: HTTPExchange) {
        guard !exchange.responseEnded else { return }
        channel.eventLoop.execute { [self] in
            _ = letGo(exchange, failing: LoadError(.cancelled, url: exchange.url))
        }
    }

    /// Gives up on `exchange`, whose request failed on the caller's side (its body, a cancel), as ``abandon(_:)``
    /// does, and returns once the event loop has let go of it: whether its response had ended, in which case it
    /// stands. After this the loop reports nothing more of the exchange, so a failure the handler's task reports
    /// next cannot meet a report from the loop (a handler's calls to its client must not overlap).
    func giveUp(_ exchange: HTTPExchange, failing error: any Error) async -> Bool {
        guard !exchange.responseEnded else { return true }
        do {
            return try await channel.eventLoop.submit { [self] in letGo(exchange, failing: error) }.get()
        } catch {
            // The loop has shut down: it reports nothing any more.
            return exchange.responseEnded
        }
    }

    /// What ``abandon(_:)`` and ``giveUp(_:failing:)`` do on the event loop, once per exchange: whether the
    /// response had ended.
    private func letGo(_ exchange: HTTPExchange, failing error: any Error) -> Bool {
        guard !exchange.responseEnded else { return true }
        guard exchange.markAbandoned() else { return false }
        // The forwarder first, so that the exchange's failure does not find it still current (and the close below
        // does not report it as a closed connection).
        // Given up with no answer at all (timed out, cancelled), not failed by the server's own word (a reset stream, a
        // malformed head): on an HTTP/2 stream, is the server still there?
        let unanswered = !exchange.endReported && !exchange.responseStarted
        forwarder.value.letGo(exchange)
        exchange.fail(error)
        if unanswered { multiplexedOn?.checkAlive() }
        close()
        pool?.release(self, reusable: false)
        return false
    }
}
