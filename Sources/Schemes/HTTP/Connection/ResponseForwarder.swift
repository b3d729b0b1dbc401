import FoundationEssentials
import HTTPTypes
import Loader
import NIOCore
import NIOHTTP1
import NIOTLS

/// The last handler of a connection's pipeline: hands each response part of the current exchange to the
/// scheme handler's client, reads from the socket only while the reader keeps up, and tells the
/// connection when the response has ended or the connection has closed.
///
/// Reads are manual (`autoRead` is off): after each batch, the next `read()` waits until the body buffer
/// has room, so a slow reader slows the socket and memory stays bounded.
final class ResponseForwarder: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private enum State {
        case idle
        case awaitingHead(HTTPExchange)
        case body(HTTPExchange, received: Int64, expected: Int64?, keepAlive: Bool)
        /// The response is complete; it is handed on, and the connection back to the pool, when the read
        /// burst ends: bytes after the end in the same burst (a response nobody asked for) must be seen
        /// before the connection can carry another request, or that request would be given them. `lastBytes`
        /// are the response's own last bytes, which must be the burst's last for the connection to be reused.
        case ended(HTTPExchange, reusable: Bool, lastBytes: TailBytes)
        case closed
    }

    private var state = State.idle
    private var context: ChannelHandlerContext?
    /// Body bytes of the current read burst, handed on when the burst ends (or the response does): one
    /// wake-up of a waiting reader per socket read, however many body parts (TLS records, chunks) it held.
    private var pending = PendingBody()
    /// A response head not handed on yet: it goes with the body and the end when they come in the same
    /// read burst (a small response), so that a waiting reader wakes once, not once for the head and again
    /// for the body.
    private var pendingHead: LoadResponse?
    /// The last bytes of the current response's body.
    private var bodyTail = TailBytes()
    /// The last bytes each read brought (the handler before the decoder), if the pipeline has one.
    private let readTail: ReadTail?
    /// The reader's count of reads when the connection last went idle.
    private var readsWhenIdle = 0
    /// Called on the event loop when a response ends: whether the connection may carry another request.
    var onResponseEnd: ((Bool) -> Void)?
    /// Called on the event loop once the connection has closed.
    var onClose: (() -> Void)?
    /// For TLS connections: completed when the handshake succeeds, failed with its error otherwise, so
    /// that a certificate problem is reported as such rather than as a closed connection.
    let handshake: EventLoopPromise<Void>?

    /// What the TLS handler reported (``TLSFaultKeeper``; for an HTTP/2 stream, its connection's): a server's
    /// refusal of the client certificate closes the connection, and the request reports it rather than a bare close.
    private let tlsFault: Locked<(any Error)?>?
    /// The HTTPS proxy a cleartext request goes to, whose TLS failures (a refused client certificate, under TLS 1.3
    /// told with the first read) are the proxy's, not the server's.
    private let tlsProxy: HTTPClientOptions.Proxy?

    /// Whether the channel is an HTTP/2 stream (through NIOHTTP2's HTTP/1 codec), which carries one exchange
    /// and closes, rather than an HTTP/1.1 connection.
    private let onStream: Bool

    /// - Parameter onStream: The channel is an HTTP/2 stream (see ``HTTP2Connection``).
    init(handshake: EventLoopPromise<Void>?, readTail: ReadTail? = nil, onStream: Bool = false, tlsFault: Locked<(any Error)?>? = nil,
         tlsProxy: HTTPClientOptions.Proxy? = nil) {
        self.handshake = handshake
        self.tlsFault = tlsFault
        self.tlsProxy = tlsProxy
        self.readTail = readTail
        self.onStream = onStream
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { handshake?.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { context.read() }
    }

    func channelActive(context: ChannelHandlerContext) {
        // Reads are manual: one is needed for the TLS handshake, and while idle to notice a close.
        context.read()
        context.fireChannelActive()
    }

    /// Makes `exchange` the current one and starts reading. Throws if the connection is busy or closed.
    func start(_ exchange: HTTPExchange) throws {
        switch state {
        case .idle:
            state = .awaitingHead(exchange)
            context?.read()
        case .closed:
            // A server's refusal of the client certificate closed it: that is the request's error.
            if let refusal = faultRefusal(url: exchange.url) { throw refusal }
            guard onStream else {
                throw LoadError(.networkConnectionLost, url: exchange.url, reason: "the connection closed before the request was sent",
                                underlying: RequestNotSent())
            }
            // An HTTP/2 stream closed before its request went out (its connection went away): nothing was sent,
            // so the request may go again whatever its method.
            throw LoadError(.networkConnectionLost, url: exchange.url, reason: "the HTTP/2 stream closed before the request was sent",
                            underlying: HTTP2StreamRefused(underlying: ChannelError.ioOnClosedChannel))
        case .awaitingHead, .body, .ended:
            throw LoadError(.unknown, url: exchange.url, reason: "internal: a connection was given two requests at once")
        }
    }

    /// Lets go of `exchange` if it is the current one and its response has not ended: the connection is closing
    /// because the exchange was given up, and what is held of its response is dropped, so that nothing more of it
    /// reaches the handler's client from here.
    func letGo(_ exchange: HTTPExchange) {
        switch state {
        case .awaitingHead(let current) where current === exchange, .body(let current, _, _, _) where current === exchange:
            _ = takePending()
            state = .closed
        default:
            break
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .awaitingHead(let exchange)):
            if head.status.code == 407, exchange.answersProxyChallenge,
               let challenge = ProxyChallenge(fieldValues: head.headers["proxy-authenticate"]) {
                // The handler asks about it and sends the request again: the proxy's page is not the response.
                fail(exchange, LoadError(.userAuthenticationRequired, url: exchange.url, reason: "the proxy asks for credentials (407)",
                                         underlying: challenge))
                context.close(promise: nil)
                return
            }
            if let refusal = Self.unreadable(head, of: exchange) {
                fail(exchange, refusal)
                context.close(promise: nil)
                return
            }
            let status = HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase)
            // An HTTP/1.0 server's answer says so (URLSession's name for it, and how -i prints its status line).
            let version = onStream ? "h2" : head.version == .http1_0 ? "http/1.0" : "http/1.1"
            let response = LoadResponse(url: exchange.url, status: status, headerFields: HTTPFields(head.headers),
                                        networkProtocolName: version)
            // Before the head itself, which waits for the read's end to go with the body's first bytes.
            if let metrics = exchange.metrics { exchange.client.handler(exchange.handler, didCollect: metrics.completed(with: response)) }
            // A 1xx has none either: NIO passes on only a 101 (dropping the others), after which it reads nothing more.
            let hasBody = !(exchange.isHead || head.status.code < 200 || head.status.code == 204 || head.status.code == 304)
            let expected = hasBody ? head.headers.first(name: "content-length").flatMap { Int64($0.trimmingSpaces()) } : 0
            // After a switch of protocol NIO's parser reads nothing more: the connection is done with HTTP.
            // An HTTP/2 stream carries one exchange (and its channel cannot be asked for buffered bytes).
            let keepAlive = head.isKeepAlive && head.status != .switchingProtocols && !onStream
            state = .body(exchange, received: 0, expected: expected, keepAlive: keepAlive)
            exchange.markResponseStarted()
            pendingHead = response
            // From the head's empty line: a body shorter than 16 bytes is compared with what came before it too.
            bodyTail = TailBytes.emptyLine

        case (.body(let buffer), .body(let exchange, let received, let expected, let keepAlive)):
            state = .body(exchange, received: received + Int64(buffer.readableBytes), expected: expected, keepAlive: keepAlive)
            pending.append(buffer)
            if readTail != nil { bodyTail.append(buffer) }

        case (.end, .body(let exchange, let received, let expected, let keepAlive)):
            exchange.markResponseEnded()
            if let expected, received != expected {
                // The parser enforces Content-Length; this guards against a body that ends early anyway.
                fail(exchange, LoadError(.networkConnectionLost, url: exchange.url, reason: "the body ended after \(received) of \(expected) bytes",
                                         underlying: ResponseCutShort(.inBody(received: received, expected: expected))))
                context.close(promise: nil)
                return
            }
            // A body of a known length ends with its own bytes; any other response (chunked, or without a
            // body) with an empty line.
            let lastBytes = (expected ?? 0) > 0 ? bodyTail : TailBytes.emptyLine
            state = .ended(exchange, reusable: keepAlive && exchange.isSent(buffered: HTTPConnection.bufferedBytes(of: context.channel)),
                           lastBytes: lastBytes)

        case (_, .ended(let exchange, _, let lastBytes)):
            // More after the end, unasked: the response stands, the connection is not trusted again.
            state = .ended(exchange, reusable: false, lastBytes: lastBytes)

        case (_, .idle):
            // A server must not speak when nobody asked: this connection cannot be trusted again.
            context.close(promise: nil)

        default:
            if case .awaitingHead(let exchange) = state {
                fail(exchange, LoadError(.badServerResponse, url: exchange.url, reason: "the response has no head"))
            }
            context.close(promise: nil)
        }
    }

    /// Why the response of `head` cannot be read as an answer to `exchange`, or `nil`: a status below 100, a switch of
    /// protocol nobody asked for (NIO's parser reads nothing after it, so its body would be lost), or a body in a
    /// transfer coding other than `chunked` (and `identity`) that the request's `TE` did not ask for, which would reach
    /// the caller still applied.
    static func unreadable(_ head: HTTPResponseHead, of exchange: HTTPExchange) -> LoadError? {
        let code = head.status.code
        if code < 100 {
            return LoadError(.badServerResponse, url: exchange.url, reason: "the server answered with status \(code), which is not an HTTP status (100 to 999)")
        }
        if code == 101, exchange.handler.request.headerFields[.upgrade] == nil {
            return LoadError(.badServerResponse, url: exchange.url,
                             reason: "the server switched protocols (101) though the request asked for no upgrade, so its answer cannot be read")
        }
        // A response without a body may name the coding its GET's would have (RFC 9110 §6.4.1): nothing to misread.
        guard !exchange.isHead, code >= 200, code != 204, code != 304 else { return nil }
        for (name, value) in head.headers where isCaseless(name, "transfer-encoding") && !isCaseless(value, "chunked") {
            // Rare: a value other than exactly `chunked`.
            let codings = value.split(separator: ",").map { $0.trimmingSpaces().lowercased() }
            let asked = exchange.handler.request.headerFields[values: .te].flatMap { $0.split(separator: ",") }
                .map { $0.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() } ?? "" }
            if let other = codings.first(where: { !$0.isEmpty && $0 != "chunked" && $0 != "identity" && !asked.contains($0) }) {
                return LoadError(.cannotDecodeContentData, url: exchange.url,
                                 reason: "the response's body is sent in the transfer coding '\(other)', which the request did not accept (only chunked is read)")
            }
        }
        return nil
    }

    /// Whether `text` is `lowercase` in any case, without a lower-case copy (this runs on every response). `lowercase`
    /// holds letters and `-` alone, which the folding below keeps apart.
    private static func isCaseless(_ text: String, _ lowercase: String) -> Bool {
        text.utf8.count == lowercase.utf8.count && text.utf8.elementsEqual(lowercase.utf8) { $0 | 0x20 == $1 }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        switch state {
        case .body(let exchange, _, _, _): deliverPending(to: exchange)
        case .ended(let exchange, let reusable, let lastBytes):
            // Bytes after the response's end that stop inside a head reach no handler here: the read then
            // ends with other bytes than the response's.
            finish(exchange, reusable: reusable && (readTail.map { $0.bytes.endsLike(lastBytes) } ?? true))
        default: break
        }
        switch state {
        case .awaitingHead:
            // Nothing of this response is buffered yet, so there is room: read on without asking.
            context.read()
        case .body(let exchange, _, _, _):
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let loop = context.eventLoop
            exchange.client.handler(exchange.handler, whenReadyForData: {
                // Usually called at once, here on the loop (the reader has room): read without a hop.
                if loop.inEventLoop {
                    loopBound.value.read()
                } else {
                    loop.execute { loopBound.value.read() }
                }
            })
        case .idle:
            if let readTail, readTail.reads != readsWhenIdle {
                // The server spoke while nobody asked, and the decoder kept it (the start of a head): the next
                // request would be given it.
                context.close(promise: nil)
                return
            }
            // Keep one read pending while idle so that a server closing the connection is noticed at once.
            context.read()
        case .ended, .closed:
            break
        }
    }

    /// Hands on a response that has ended, its connection first: back to the pool before the reader wakes,
    /// so that the reader's next request can have it.
    private func finish(_ exchange: HTTPExchange, reusable: Bool) {
        state = .idle
        readsWhenIdle = readTail?.reads ?? 0
        // Taken out of the forwarder first: handing the connection back may start the next exchange on it
        // at once, and a failure of that one (a write to a reset socket closes the channel within the call)
        // must not find this response's head and body pending.
        let (head, body) = takePending()
        onResponseEnd?(reusable)
        // Finished from here, with the body, so the reader needs no second wake-up: whoever hears of the
        // exchange's end after this (the handler's task, if it has one) has nothing left to report.
        deliver(head, body, finished: true, to: exchange)
        exchange.succeed()
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .awaitingHead(let exchange):
            let closer = silence.map { "no response came: \($0)" } ?? "the server closed the connection without a response"
            fail(exchange, faultRefusal(url: exchange.url)
                ?? LoadError(.networkConnectionLost, url: exchange.url, reason: closer, underlying: ResponseCutShort(.beforeResponse)))
        case .body(let exchange, let received, let expected, _):
            // An HTTP/2 connection the server's breach of the protocol closed says so.
            var cut = Self.cutInBody(exchange, received: received, expected: expected)
            if let silence { cut.reason = "the body stopped after \(received) bytes: \(silence)" }
            fail(exchange, faultRefusal(url: exchange.url) ?? cut)
        case .ended(let exchange, _, _):
            // Closed in the burst that completed the response (the server's choice, or an error after the end).
            finish(exchange, reusable: false)
        case .idle, .closed:
            break
        }
        state = .closed
        handshake?.fail(ChannelError.ioOnClosedChannel)
        onResponseEnd = nil
        onClose?()
        onClose = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch state {
        case .body(let exchange, let received, let expected, _) where (error as? HTTPParserError) == .invalidEOFState:
            // The parser saw the connection end inside a body: a truncation, not a malformed response.
            fail(exchange, Self.cutInBody(exchange, received: received, expected: expected))
        case .awaitingHead(let exchange) where (error as? HTTPParserError) == .invalidEOFState:
            // The connection ended inside the head: cut off, not malformed.
            fail(exchange, LoadError(.networkConnectionLost, url: exchange.url, reason: "the server closed the connection in the middle of the response head",
                                     underlying: ResponseCutShort(.inHead)))
        case .awaitingHead(let exchange), .body(let exchange, _, _, _):
            // On an HTTP/2 stream, the close of its connection by a refused client certificate comes as the stream's;
            // through an HTTPS proxy, the fault kept is the proxy's (faultRefusal).
            fail(exchange, faultRefusal(url: exchange.url) ?? HTTPErrorMapping.map(error, url: exchange.url))
        case .ended(let exchange, _, let lastBytes):
            // After a complete response (a response nobody asked for): it stands; the connection closes below.
            state = .ended(exchange, reusable: false, lastBytes: lastBytes)
        case .idle, .closed:
            handshake?.fail(error)
        }
        context.close(promise: nil)
    }

    /// The TLS fault kept on the connection as the load's error (``TLSFaultKeeper/refusal(in:url:)``), said of the HTTPS
    /// proxy when the connection's TLS is the proxy's alone (a cleartext request to it).
    private func faultRefusal(url: URL) -> LoadError? {
        if let tlsProxy, let error = tlsFault?.withLock({ $0 }), ProxyTLSFailure.isTLS(error) {
            return ProxyTLSFailure.error(error, proxy: tlsProxy, url: url)
        }
        return TLSFaultKeeper.refusal(in: tlsFault, url: url)
    }

    /// Why the client closed the connection, when it did so for a server gone silent (an HTTP/2 stream's connection).
    private var silence: HTTP2ServerSilent? { tlsFault?.withLock { $0 } as? HTTP2ServerSilent }

    /// The error of a body whose connection ended after `received` of `expected` bytes (when the head said).
    private static func cutInBody(_ exchange: HTTPExchange, received: Int64, expected: Int64?) -> LoadError {
        let of = expected.map { " of \($0)" } ?? ""
        return LoadError(.networkConnectionLost, url: exchange.url, reason: "the server closed the connection after \(received)\(of) body bytes",
                         underlying: ResponseCutShort(.inBody(received: received, expected: expected)))
    }

    private func fail(_ exchange: HTTPExchange, _ error: LoadError) {
        // Bytes that arrived before the failure go first, as they would have without batching.
        deliverPending(to: exchange)
        state = .closed
        exchange.fail(error)
    }

    /// Hands on the head, if it is still here, and the body bytes of the burst.
    private func deliverPending(to exchange: HTTPExchange) {
        let (head, body) = takePending()
        deliver(head, body, finished: false, to: exchange)
    }

    /// The head still held, if any, and the burst's body bytes, leaving neither here.
    private func takePending() -> (LoadResponse?, PendingBody) {
        defer { pendingHead = nil }
        return (pendingHead, pending.take())
    }

    /// The head (in one call with the body, so that a waiting reader wakes once), else the body alone;
    /// then the end if `finished`.
    private func deliver(_ head: LoadResponse?, _ body: PendingBody, finished: Bool, to exchange: HTTPExchange) {
        let client = exchange.client
        if let head {
            client.handler(exchange.handler, didReceive: head, body: body.joined, finished: finished)
            return
        }
        body.forEach { client.handler(exchange.handler, didLoad: $0) }
        if finished { client.handlerDidFinishLoading(exchange.handler) }
    }
}
