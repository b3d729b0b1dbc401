import FoundationEssentials
import Loader
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import Synchronization

/// One HTTP/2 connection (negotiated by ALPN over TLS): many requests at once, each on a stream of its own.
///
/// A stream is an ``HTTPConnection`` whose channel is the stream's, with NIOHTTP2's HTTP/1 codec and a
/// ``ResponseForwarder`` on it, so a request goes out and its response comes back exactly as on an HTTP/1.1
/// connection; it carries one request and closes. The pool counts the streams open on each connection
/// and gives a new request a stream while the server's limit allows.
final class HTTP2Connection: Sendable {
    let channel: any Channel
    let key: ConnectionPool.Key
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    /// When the connection last had no stream open (uptime nanoseconds), or 0 while it has some.
    let idleSince = Atomic<UInt64>(0)
    /// Whether an idle timer is pending for this connection.
    let idleTimerArmed = Atomic<Bool>(false)
    /// The last stream the server's GOAWAY said it will process (`Int.max` until one comes): the streams
    /// after it were never processed, and their requests may be sent again (RFC 9113 §6.8).
    let lastProcessedStream = Atomic<Int>(.max)
    /// How many of its streams this client reset, closing them while still open (a load cancelled mid-body, a
    /// request body its response cut short): a count for diagnostics and tests, since a stream whose request and
    /// response both ended must close without a reset.
    let resetStreams = Atomic<Int>(0)
    /// How often the connection has read anything from the server.
    private let heard: ReadCount
    /// Whether a PING of ``checkAlive()`` waits for its answer.
    private let pingPending = Atomic<Bool>(false)
    /// How long ``checkAlive()`` waits for the server's answer to its PING.
    static let pingPatience: TimeAmount = .seconds(5)
    /// What the TLS handler reported (``TLSFaultKeeper``), for the streams a refused client certificate closes; also
    /// a server's HTTP/1 answer to prior knowledge (``ServerPrefaceCheck``) and a breach of the protocol by the
    /// server (``HTTP2ProtocolViolation``), each of which ends the connection.
    private let tlsFault: Locked<(any Error)?>?
    /// How the connection opened, told with the first stream's exchange.
    private let record: ConnectionRecord?

    /// Streams a connection carries at once until the server's SETTINGS say otherwise: RFC 9113 §6.5.2
    /// recommends servers allow at least 100.
    static let defaultStreamLimit = 100
    /// The flow-control window of each stream (the most a server sends ahead of the reader), and of the
    /// whole connection.
    static let streamWindow = 1 << 20
    static let connectionWindow = 8 << 20
    /// The largest response head taken (SETTINGS_MAX_HEADER_LIST_SIZE): HTTP/1.1's, 80 KiB, where NIOHTTP2's default,
    /// 16 KiB, refused heads that curl and HTTP/1.1 take (long cookies, policies) with an error of the whole connection.
    static let maximumHeaderListSize = 80 * 1024

    init(channel: any Channel, key: ConnectionPool.Key, multiplexer: NIOHTTP2Handler.StreamMultiplexer, heard: ReadCount,
         tlsFault: Locked<(any Error)?>? = nil, record: ConnectionRecord? = nil) {
        self.heard = heard
        self.record = record
        self.channel = channel
        self.key = key
        self.multiplexer = multiplexer
        self.tlsFault = tlsFault
    }

    var isActive: Bool { channel.isActive }

    /// Keeps a connection error of the server's, which ends the connection (NIOHTTP2 has answered it with GOAWAY), so
    /// that the loads on its streams fail saying why, and are not sent again to the same server; `atOpening` when it
    /// came before the server's SETTINGS.
    func noteProtocolViolation(_ error: any Error, atOpening: Bool) {
        tlsFault?.withLock { if $0 == nil { $0 = HTTP2ProtocolViolation(underlying: error, atOpening: atOpening) } }
    }

    /// A new stream, ready for one request; the pool has counted it already, and is told if it cannot open.
    func openStream(for pool: ConnectionPool, url: URL) async throws -> HTTPConnection {
        // Handed over through a lock, not the continuation alone: a task resumed before it has suspended goes on
        // past an atomic the thread sanitizer does not follow (see ``ConnectionPool``'s `open`).
        let made = Locked<Result<HTTPConnection, LoadError>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            openStream(for: pool, url: url) { result in
                made.withLock { $0 = result }
                continuation.resume()
            }
        }
        return try made.withLock { $0! }.get()
    }

    /// Opens a new stream for one request, whose place the pool has counted, and calls `opened` with it on the
    /// event loop, in the stream's initializer: a request written there goes out as the stream activates, so
    /// that opening and sending take one trip to the loop. If no stream can open, the place is given back and
    /// `opened` gets the error (nothing was sent: the request may go again, on another connection).
    func openStream(for pool: ConnectionPool, url: URL, then opened: @escaping @Sendable (Result<HTTPConnection, LoadError>) -> Void) {
        let key = key
        let httpProtocol: HTTP2FramePayloadToHTTP1ClientCodec.HTTPProtocol = key.scheme == "https" ? .https : .http
        let created = channel.eventLoop.makePromise(of: (any Channel).self)
        // Fails only when the initializer failed or never ran: once it succeeds, NIOHTTP2 succeeds the promise
        // whatever follows (a stream that then closes ends its exchange, which tells the request).
        created.futureResult.whenFailure { [self] error in
            pool.streamEnded(nil, on: self)
            // A connection the server refused (its client certificate, or an HTTP/1 answer to prior knowledge) says
            // so, and is not tried again.
            opened(.failure(TLSFaultKeeper.refusal(in: tlsFault, url: url)
                ?? LoadError(.networkConnectionLost, url: url, reason: "the HTTP/2 connection could not open a stream",
                             underlying: HTTP2StreamRefused(underlying: error))))
        }
        multiplexer.createStreamChannel(promise: created) { [self] stream in
            do {
                // Reads follow the reader, as on an HTTP/1.1 connection: the stream's flow-control
                // window then holds the server back.
                try stream.syncOptions?.setOption(.autoRead, value: false)
                let sync = stream.pipeline.syncOperations
                let forwarder = ResponseForwarder(handshake: nil, onStream: true, tlsFault: tlsFault)
                try sync.addHandler(HTTP2StatusCheck())
                try sync.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: httpProtocol))
                try sync.addHandler(HTTP2StreamGuard { [self] in lastProcessedStream.load(ordering: .acquiring) })
                try sync.addHandler(forwarder)
                let connection = HTTPConnection(channel: stream, key: key, forwarder: forwarder, multiplexedOn: self,
                                                record: record)
                connection.attach(to: pool)
                opened(.success(connection))
                return stream.eventLoop.makeSucceededVoidFuture()
            } catch {
                return stream.eventLoop.makeFailedFuture(error)
            }
        }
    }

    func close() {
        channel.close(promise: nil)
    }

    /// A stream was given up before any answer came (its load timed out or was cancelled): the server may have gone
    /// silent with its socket still open (a host gone, a NAT that forgot the connection), and every later load on this
    /// connection would wait out its timeout. So a PING goes out (RFC 9113 §6.7), and if nothing at all is read from
    /// the server within ``pingPatience`` (its answer may come behind megabytes of DATA, which count too) the connection
    /// is closed: its other streams fail, and later loads get a new one. One check at a time.
    func checkAlive() {
        guard channel.isActive, !pingPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        channel.eventLoop.execute { [self] in
            let before = heard.batches.load(ordering: .relaxed)
            channel.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: before), ack: false)), promise: nil)
            channel.eventLoop.scheduleTask(in: Self.pingPatience) { [self] in
                pingPending.store(false, ordering: .releasing)
                if heard.batches.load(ordering: .relaxed) == before {
                    // Kept where its streams look when the close reaches them (unless a fault came first).
                    tlsFault?.withLock { if $0 == nil { $0 = HTTP2ServerSilent(patience: Self.pingPatience) } }
                    channel.close(promise: nil)
                }
            }
        }
    }
}

/// Sits behind NIOHTTP2's handler on an HTTP/2 connection and tells the pool what concerns the whole
/// connection: the server's stream limit (SETTINGS), that it takes no new streams (GOAWAY), that it closed.
final class HTTP2ConnectionWatcher: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    /// The connection, made with the pipeline's HTTP/2 handlers.
    let connection: HTTP2Connection
    /// The handler that closes the connection once it has sent a GOAWAY with an error.
    private let goAways: ErrorGoAwayCloser
    /// Set once the connection is in the pool (and dropped when it closes, which ends the reference cycle).
    var pool: ConnectionPool?
    /// The server's limit, as its latest SETTINGS said (the pool's copy is kept once the connection is in it).
    private(set) var streamLimit = HTTP2Connection.defaultStreamLimit
    /// Whether the server sent GOAWAY.
    private(set) var goingAway = false
    /// Whether the server's SETTINGS came (its connection preface).
    private var sawSettings = false
    /// Whether the server sent GOAWAY: the connection ends by its choice, and the streams it left out go again.
    private var serverWentAway = false

    init(connection: HTTP2Connection, goAways: ErrorGoAwayCloser) {
        self.connection = connection
        self.goAways = goAways
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data).payload {
        case .settings(.settings(let settings)):
            sawSettings = true
            guard let limit = settings.last(where: { $0.parameter == .maxConcurrentStreams })?.value else { break }
            streamLimit = limit
            pool?.streamLimitChanged(connection, to: limit)
        case .goAway(let lastStreamID, _, _):
            // Before NIOHTTP2 closes the streams after it, which it does once this frame has been passed on.
            connection.lastProcessedStream.store(Int(lastStreamID), ordering: .releasing)
            serverWentAway = true
            goingAway = true
            pool?.goingAway(connection)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        pool?.connectionClosed(connection)
        pool = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The socket's or TLS's errors end the connection. NIOHTTP2 reports a stream's errors here too, after
        // resetting that stream, alike with its connection errors, which it answers with GOAWAY: then the closer has
        // seen that frame go out, and closes the connection once it is flushed. After one stream's error the
        // connection takes no new stream, and closes once its streams have ended.
        if error is IOError || error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError || error is ChannelError {
            context.close(promise: nil)
            return
        }
        // Before the server's SETTINGS, which must be its first frame, an error can only be the connection's. Later, one
        // that NIOHTTP2 answered with a GOAWAY of ours is the server's breach, unless the connection was ending anyway
        // (the server's own GOAWAY, whose left-out streams must go again; a close, a write after it): not failed for.
        let ours = goAways.sentError != nil && !serverWentAway && context.channel.isActive && !(error is NIOHTTP2Errors.IOOnClosedConnection)
        if !sawSettings || ours { connection.noteProtocolViolation(error, atOpening: !sawSettings) }
        goingAway = true
        pool?.goingAway(connection)
    }
}

/// A server's breach of HTTP/2 that ends the connection (a frame where its SETTINGS must come, a malformed frame, a
/// frame no stream or state allows): NIOHTTP2's connection error.
struct HTTP2ProtocolViolation: HTTP2ProtocolError, CustomStringConvertible {
    let underlying: any Error
    /// Whether it came before the server's SETTINGS.
    var atOpening = true
    var description: String {
        // NIOHTTP2's errors name the source line that raised them: not the reader's concern.
        let text = "\(underlying)"
        let trimmed = text.firstRange(of: "(file: ").map { String(text[..<$0.lowerBound]) } ?? text
        return "the server broke the HTTP/2 protocol\(atOpening ? " as the connection opened" : ""): \(trimmed)"
    }
}

/// Why a request on an HTTP/2 stream may be sent again: the server did not process it (it refused the
/// stream, or its GOAWAY named an earlier stream as the last it processes), or no stream could be opened.
struct HTTP2StreamRefused: Error, CustomStringConvertible {
    let underlying: any Error
    var description: String { "the HTTP/2 stream was not processed: \(underlying)" }
}

/// On a stream's pipeline, between NIOHTTP2's HTTP/1 codec and the forwarder: keeps back informational
/// responses (1xx: a 100 Continue, a 103 Early Hints), which NIOHTTP1's decoder drops on HTTP/1.1 but the
/// codec passes on; and turns a stream the server never processed into ``HTTP2StreamRefused``, which the
/// handler sends again (a GOAWAY after some requests is routine): one it reset with REFUSED_STREAM, one after
/// the last its GOAWAY named, one whose head could not go out at all (opened just before a GOAWAY came), and one
/// that closed before its head was written (its connection closed while the request's sending task was on its way).
final class HTTP2StreamGuard: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    /// The last stream the connection's GOAWAY let through (`Int.max` before one).
    private let lastProcessedStream: () -> Int
    private var responseStarted = false
    /// Whether the request's head was handed to NIOHTTP2 (whose failure to send it the write's promise tells).
    private var headWritten = false

    init(lastProcessedStream: @escaping () -> Int) {
        self.lastProcessedStream = lastProcessedStream
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data), (100..<200).contains(head.status.code) { return }
        responseStarted = true
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        headWritten = true
        // NIOHTTP2 fails the write of a new stream's HEADERS that may no longer go out (after a GOAWAY), and
        // tells the stream nothing else: without this, the load would wait for a response that cannot come.
        let written = promise ?? context.eventLoop.makePromise()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        written.futureResult.whenFailure { error in
            let (guardian, context) = bound.value
            guard !guardian.responseStarted else { return }
            context.fireErrorCaught(HTTP2StreamRefused(underlying: error))
            context.close(promise: nil)
        }
        context.write(data, promise: written)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // NIOHTTP2 closes every stream of a connection that closed, those whose head is still to be written among
        // them, without an error: their requests never went out (a load with a body writes its head from a task of
        // its own, after the exchange began waiting for the response).
        if !headWritten, !responseStarted {
            context.fireErrorCaught(HTTP2StreamRefused(underlying: ChannelError.ioOnClosedChannel))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !responseStarted, let closed = error as? NIOHTTP2Errors.StreamClosed else {
            context.fireErrorCaught(error)
            return
        }
        // NIOHTTP2 closes the streams after a GOAWAY's last one with CANCEL.
        let afterGoAway = closed.errorCode == .cancel && Int(closed.streamID) > lastProcessedStream()
        if closed.errorCode == .refusedStream || afterGoAway {
            context.fireErrorCaught(HTTP2StreamRefused(underlying: error))
        } else {
            context.fireErrorCaught(error)
        }
    }
}

/// A server that does not speak HTTP/2 as it must, on a connection meant to (its first frames broken, or an HTTP/1
/// answer to prior knowledge): the `underlying` error of the load's ``LoadError`` (`badServerResponse`), which
/// `loadurl` exits with as curl does for its HTTP/2 framing errors (16).
public protocol HTTP2ProtocolError: Error {}
