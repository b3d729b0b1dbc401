import Foundation
import HTTPScheme
import Loader
import NIOCore
import NIOPosix
import Synchronization

/// An HTTP/1.1 server on 127.0.0.1 that misbehaves on purpose, as nginx cannot: each path is a script of
/// raw bytes, delays and closes. It counts the connections it accepts and sees closed.
final class ScriptedServer: Sendable {
    static let shared: ScriptedServer = try! ScriptedServer()

    let port: Int
    private let channel: any Channel

    /// A server of its own, for a test that counts its connections (``shared`` serves tests side by side).
    init() throws {
        let counters = Counters()
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ScriptHandler(counters: counters))
                }
            }
        channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress!.port!
        self.counters = counters
    }

    private let counters: Counters

    deinit {
        // A test's own server stops listening when the test lets go of it.
        channel.close(promise: nil)
    }

    var acceptedCount: Int { counters.accepted.load(ordering: .relaxed) }
    var closedCount: Int { counters.closed.load(ordering: .relaxed) }
    var areaChallengeCount: Int { counters.areaChallenges.load(ordering: .relaxed) }
    var secretRequestCount: Int { counters.secretRequests.load(ordering: .relaxed) }

    func url(_ path: String, host: String = "127.0.0.1") -> URL {
        URL(string: "http://\(host):\(port)\(path)")!
    }

    final class Counters: Sendable {
        let nextID = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let closed = Atomic<Int>(0)
        /// The nonces `/digest-always-stale` has handed out.
        let staleNonces = Atomic<Int>(0)
        /// The 401s `/area/` has sent.
        let areaChallenges = Atomic<Int>(0)
        /// The requests for a target holding `/secret` that the forward proxy script received.
        let secretRequests = Atomic<Int>(0)
    }
}

/// Reads requests (head and Content-Length body) and plays the script for each path.
private final class ScriptHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let counters: ScriptedServer.Counters
    let connectionID: Int
    var buffer = ByteBuffer()
    /// Requests this connection has answered.
    var served = 0

    init(counters: ScriptedServer.Counters) {
        self.counters = counters
        self.connectionID = counters.nextID.wrappingAdd(1, ordering: .relaxed).newValue
    }

    func channelActive(context: ChannelHandlerContext) {
        counters.accepted.wrappingAdd(1, ordering: .relaxed)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        counters.closed.wrappingAdd(1, ordering: .relaxed)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        buffer.writeBuffer(&incoming)
        answerEarly(context)
        while let request = takeRequest() {
            play(request, context: context)
        }
    }

    /// Whether this connection's upload to `/garbage-before-body` was answered.
    private var answeredEarly = false

    /// `PUT /garbage-before-body` is answered as soon as its head is in, with a malformed status line, while
    /// the client is still sending its body: a server that will not wait for an upload. `PUT /refuse-upload`
    /// likewise, with a well-formed 413 (and `Connection: close`), as a server refuses an upload too large.
    /// `POST /stream-at-once` gets an endless chunked response at once.
    private func answerEarly(_ context: ChannelHandlerContext) {
        guard !answeredEarly else { return }
        let bytes = buffer.readableBytesView
        if bytes.starts(with: Array("PUT /garbage-before-body ".utf8)) {
            answeredEarly = true
            Self.send(context, "HTTP/1.1 twohundred OK\r\nContent-Length: 0\r\n\r\n")
        } else if bytes.starts(with: Array("PUT /refuse-upload ".utf8)) {
            answeredEarly = true
            Self.send(context, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n")
        } else if bytes.starts(with: Array("POST /stream-at-once ".utf8)) {
            // An endless body, small chunks often, begun as the head of an upload arrives: the response's events
            // keep coming while the client still sends.
            answeredEarly = true
            Self.send(context, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            Self.streamForever(NIOLoopBound(context, eventLoop: context.eventLoop), loop: context.eventLoop, chunk: 64)
        }
    }

    struct Request {
        var method: String
        var path: String
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
    }

    private func takeRequest() -> Request? {
        let bytes = buffer.readableBytesView
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[bytes.startIndex..<end.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var request = Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: [])
        let headLength = end.upperBound - bytes.startIndex
        if request.header("transfer-encoding")?.lowercased() == "chunked" {
            // Decode chunks; wait for the terminating zero chunk.
            var view = Array(bytes[end.upperBound...])
            var body: [UInt8] = []
            var consumed = 0
            while true {
                guard let lineEnd = view.firstRange(of: Array("\r\n".utf8)) else { return nil }
                let size = Int(String(decoding: view[..<lineEnd.lowerBound], as: UTF8.self), radix: 16) ?? 0
                guard view.count >= lineEnd.upperBound + size + 2 else { return nil }
                body += view[lineEnd.upperBound..<(lineEnd.upperBound + size)]
                let used = lineEnd.upperBound + size + 2
                consumed += used
                view.removeFirst(used)
                if size == 0 { break }
            }
            request.body = body
            buffer.moveReaderIndex(forwardBy: headLength + consumed)
            return request
        }
        let length = Int(request.header("content-length") ?? "0") ?? 0
        guard bytes.count >= headLength + length else { return nil }
        request.body = Array(bytes[end.upperBound..<(end.upperBound + length)])
        buffer.moveReaderIndex(forwardBy: headLength + length)
        return request
    }

    private static func send(_ context: ChannelHandlerContext, _ text: String) {
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text)), promise: nil)
    }

    private static func send(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private static func respond(_ context: ChannelHandlerContext, status: String = "200 OK", headers: [String] = [], body: String) {
        let head = (["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)"] + headers).joined(separator: "\r\n")
        Self.send(context, head + "\r\n\r\n" + body)
    }

    /// 1,000 bytes (byte i is i % 251) with a strong ETag and byte ranges. Without a Range the connection closes
    /// after 400 of them. With `Range: bytes=N-` (and no If-Range, or `"v1"`): /resumable sends the rest as a 206;
    /// /resumable-twice sends only 300 bytes of it and closes, unless N is 700; /resumable-capped sends a 206 of
    /// bytes N to N+99 alone. /resumable-changed has changed: any Range gets a whole 200 of other bytes (byte i is
    /// (i + 7) % 251) with ETag "v2". /resumable-gzip claims a gzip coding and closes after 400 bytes.
    /// /resumable-token is /resumable for a request with `X-Token: t1` only, a 403 otherwise.
    private func playResumable(_ request: Request, path: String, context: ChannelHandlerContext) {
        if path == "/resumable-token", request.header("x-token") != "t1" {
            return Self.respond(context, status: "403 Forbidden", body: "no token\n")
        }
        let body = (0..<1000).map { UInt8($0 % 251) }
        let fields = "Accept-Ranges: bytes\r\nContent-Type: application/octet-stream\r\n"
        guard path != "/resumable-gzip" else {
            Self.send(context, "HTTP/1.1 200 OK\r\nETag: \"g1\"\r\n\(fields)Content-Encoding: gzip\r\nContent-Length: 1000\r\n\r\n")
            Self.send(context, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3] + Array(body[10..<400]))
            context.close(promise: nil)
            return
        }
        guard let range = request.header("range"), range.hasPrefix("bytes="), let start = Int(range.dropFirst(6).dropLast()), start < 1000 else {
            Self.send(context, "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\n\(fields)Content-Length: 1000\r\n\r\n")
            Self.send(context, Array(body[..<400]))
            context.close(promise: nil)
            return
        }
        let unchanged = request.header("if-range").map { $0 == "\"v1\"" } ?? true
        guard path != "/resumable-changed", unchanged else {
            Self.send(context, "HTTP/1.1 200 OK\r\nETag: \"v2\"\r\n\(fields)Content-Length: 1000\r\n\r\n")
            Self.send(context, (0..<1000).map { UInt8(($0 + 7) % 251) })
            return
        }
        let end = path == "/resumable-capped" ? min(start + 99, 999) : 999
        Self.send(context, "HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\n\(fields)Content-Range: bytes \(start)-\(end)/1000\r\nContent-Length: \(end + 1 - start)\r\n\r\n")
        if path == "/resumable-twice", start != 700 {
            Self.send(context, Array(body[start..<(start + 300)]))
            context.close(promise: nil)
        } else {
            Self.send(context, Array(body[start...end]))
        }
    }

    private func play(_ request: Request, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let bound = NIOLoopBound(context, eventLoop: loop)
        let path = request.path
        served += 1
        switch path {
        case "/one-per-connection":
            // Answers the first request of a connection and closes on the second without a word: a server
            // that dropped an idle keep-alive connection just as the client reused it.
            if served == 1 {
                Self.respond(context, headers: ["X-Connection: \(connectionID)"], body: "fresh \(request.method)")
            } else {
                context.close(promise: nil)
            }
        case "/once-slowly":
            // Like /one-per-connection, but the first answer takes 200 ms, so that requests sent together
            // each open a connection of their own.
            if served == 1 {
                let id = connectionID
                loop.scheduleTask(in: .milliseconds(200)) {
                    Self.respond(bound.value, headers: ["X-Connection: \(id)"], body: "fresh")
                }
            } else {
                context.close(promise: nil)
            }
        case "/ok":
            Self.respond(context, headers: ["X-Connection: \(connectionID)"], body: "ok")
        case "/no-content-with-body":
            // A 204 followed, in the same write, by a body it must not have (RFC 9110 §15.3.5).
            Self.send(context, "HTTP/1.1 204 No Content\r\nX-Connection: \(connectionID)\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray")
        case "/length-spaced":
            // A Content-Length with a space after its digits (optional whitespace, RFC 9110 §5.5).
            Self.send(context, "HTTP/1.1 200 OK\r\nContent-Length: 2 \r\nX-Connection: \(connectionID)\r\n\r\nhi")
        case "/echo":
            let body = String(decoding: request.body, as: UTF8.self)
            Self.respond(context, headers: ["X-Method: \(request.method)", "X-Chunked: \(request.header("transfer-encoding") != nil)"], body: body)
        case "/echo-slowly":
            // /echo, 3 s after the body: a client still sending meanwhile (however slowly it runs) has no answer yet.
            let body = String(decoding: request.body, as: UTF8.self)
            loop.scheduleTask(in: .seconds(3)) { Self.respond(bound.value, body: body) }
        case "/echo-headers":
            Self.respond(context, body: request.headers.map { "\($0.0.lowercased()): \($0.1)" }.joined(separator: "\n"))
        case "/truncated":
            Self.send(context, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
            context.close(promise: nil)
        case "/resumable", "/resumable-changed", "/resumable-twice", "/resumable-capped", "/resumable-gzip", "/resumable-token":
            playResumable(request, path: path, context: context)
        case "/cache-truncated":
            // A response a cache may keep for an hour, cut short: nothing of it may be kept.
            Self.send(context, "HTTP/1.1 200 OK\r\nCache-Control: max-age=3600\r\nContent-Length: 100\r\n\r\nonly ten b")
            context.close(promise: nil)
        case "/http10":
            // An HTTP/1.0 server: its version in the status line, the connection closed after the body.
            Self.send(context, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            context.close(promise: nil)
        case "/http10-to-close":
            // An HTTP/1.0 server that gives no length: the body is whatever comes until it closes.
            Self.send(context, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
            context.close(promise: nil)
        case "/early-hints":
            // A 103 (RFC 8297) before the answer: in one write, then the final response a moment later in another.
            Self.send(context, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(100)) { Self.respond(bound.value, headers: ["X-Final: 1"], body: "hinted") }
        case "/chunked-cut":
            // A chunked body that stops after a whole chunk, its last (zero-size) chunk never sent.
            Self.send(context, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            context.close(promise: nil)
        case "/empty-reply":
            context.close(promise: nil)
        case "/half-head":
            Self.send(context, "HTTP/1.1 200 OK\r\nContent-Le")
            context.close(promise: nil)
        case "/reset", "/reset-now":
            // /reset: a response cut short by a reset; /reset-now: no answer at all, a reset as the request arrives.
            if path == "/reset" {
                Self.send(context, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + String(repeating: "x", count: 1000))
            }
            // SO_LINGER 0 makes close() send a reset instead of a FIN.
            if let options = context.channel as? any SocketOptionProvider {
                options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in bound.value.close(promise: nil) }
            } else {
                context.close(promise: nil)
            }
        case "/bad-status":
            Self.send(context, "HTTP/1.1 twohundred OK\r\nContent-Length: 0\r\n\r\n")
        case "/bad-chunked":
            Self.send(context, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n")
        case "/huge-header":
            Self.send(context, "HTTP/1.1 200 OK\r\nX-Huge: " + String(repeating: "h", count: 200_000) + "\r\nContent-Length: 0\r\n\r\n")
        case "/long-head":
            // Past NIO's default of 80 KiB, within curl's 100 KiB a field.
            Self.send(context, "HTTP/1.1 200 OK\r\nX-Long: " + String(repeating: "l", count: 90_000) + "\r\nContent-Length: 4\r\n\r\nlong")
        case "/transfer-gzip":
            // A transfer coding before chunked that no TE field asked for: the chunks' bytes are still gzip's.
            Self.send(context, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n")
        case "/transfer-gzip-head":
            // A bodiless answer may name the coding its GET's body would have.
            Self.send(context, "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        case "/transfer-unknown":
            Self.send(context, "HTTP/1.1 200 OK\r\nTransfer-Encoding: foo\r\nConnection: close\r\n\r\nfoo-coded bytes")
            context.close(promise: nil)
        case "/switch-unasked":
            // A switch of protocol the request did not ask for, with bytes after it.
            Self.send(context, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: upgrade\r\n\r\nhello")
        case "/status-zero":
            Self.send(context, "HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nok")
        case "/slow-headers":
            loop.scheduleTask(in: .seconds(3)) { Self.respond(bound.value, body: "late") }
        case "/stall-body":
            Self.send(context, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfive!")
        case "/slow":
            // Ten bytes over about 0.6 s, then the end: the conformance suite's slow fixture.
            Self.send(context, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
            for index in 1...10 {
                loop.scheduleTask(in: .milliseconds(Int64(60 * index))) { Self.send(bound.value, "s") }
            }
        case "/endless":
            Self.send(context, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Connection: \(connectionID)\r\n\r\n")
            Self.streamForever(bound, loop: loop)
        case "/redirect-gzip-endless":
            // A redirect whose (claimed) gzip body never ends: a client that follows it must give the body up.
            // A trickle (100 kB/s), not a flood: a client slowed down (the thread sanitizer) must not make this
            // server pile up writes that every other test then waits behind.
            Self.send(context, "HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
            Self.streamForever(bound, loop: loop, chunk: 1024, every: .milliseconds(10))
        case "/extra-response":
            // After 200 ms, a response followed in the same write by a second one nobody asked for: a client
            // that hands the connection on at the first response's end would give the second to the next request.
            loop.scheduleTask(in: .milliseconds(200)) {
                Self.send(bound.value, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst" + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nbogus")
            }
        case "/extra-response-split":
            // As /extra-response, but the unasked response is cut after its first field: the write ends inside
            // its head, which NIO's parser holds without a word, and the rest comes 100 ms later.
            loop.scheduleTask(in: .milliseconds(200)) {
                Self.send(bound.value, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst" + "HTTP/1.1 200 OK\r\nX-Stray: 1\r\n")
                loop.scheduleTask(in: .milliseconds(100)) { Self.send(bound.value, "Content-Length: 5\r\n\r\nbogus") }
            }
        case "/late-stray":
            // A whole response, then 100 ms later, on the idle connection, the start of a head nobody asked for.
            Self.respond(context, headers: ["X-Connection: \(connectionID)"], body: "ok")
            loop.scheduleTask(in: .milliseconds(100)) { Self.send(bound.value, "HTTP/1.1 200 OK\r\nX-Stray: 1\r\n") }
        case "/switching":
            // A switch of protocol the client never asked for: after it the connection no longer speaks HTTP.
            Self.send(context, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: unasked\r\nConnection: upgrade\r\n\r\n")
        case "/switching-with-length":
            // The same, with a Content-Length, which a 1xx has no body to measure (RFC 9110 §8.6).
            Self.send(context, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: unasked\r\nConnection: upgrade\r\nContent-Length: 5\r\n\r\n")
        case "/to-file":
            // A server that sends its client to a local file, keeping the method and body (307).
            Self.respond(context, status: "307 Temporary Redirect", headers: ["Location: file:///tmp/redirected-here"], body: "")
        case "/same-until-third":
            // Redirects to itself until the connection's third request: a resource being prepared.
            if served < 3 {
                Self.respond(context, status: "302 Found", headers: ["Location: /same-until-third"], body: "")
            } else {
                Self.respond(context, body: "ready")
            }
        case "/close":
            Self.respond(context, headers: ["Connection: close", "X-Connection: \(connectionID)"], body: "bye")
            context.close(promise: nil)
        case "/401":
            Self.respond(context, status: "401 Unauthorized", headers: ["WWW-Authenticate: Basic realm=\"tests\""], body: "who are you?")
        case "/401-multi":
            // Two challenges in two fields, Basic second, with a realm holding a comma and an escaped quote.
            if let authorization = request.header("authorization") {
                Self.respond(context, body: "welcome \(authorization)")
            } else {
                Self.respond(context, status: "401 Unauthorized",
                             headers: ["WWW-Authenticate: Negotiate", "WWW-Authenticate: Basic realm=\"multi, \\\"quoted\\\"\", charset=\"UTF-8\""],
                             body: "who are you?")
            }
        case "/digest-stale":
            // Digest: the first answer's nonce is called stale, the second's accepted (the hash is not checked here:
            // lighttpd's tests check it).
            let authorization = request.header("authorization") ?? ""
            if authorization.contains("nonce=\"second\"") {
                Self.respond(context, body: "welcome after stale")
            } else {
                let stale = authorization.contains("nonce=\"first\"")
                Self.respond(context, status: "401 Unauthorized",
                             headers: ["WWW-Authenticate: Digest realm=\"stale\", nonce=\"\(stale ? "second" : "first")\", qop=\"auth\"\(stale ? ", stale=true" : "")"],
                             body: "who are you?")
            }
        case "/digest-always-stale":
            // Every answer's nonce is called stale, with a new one each time.
            let answered = request.header("authorization") != nil
            let nonce = counters.staleNonces.wrappingAdd(1, ordering: .relaxed).newValue
            Self.respond(context, status: "401 Unauthorized",
                         headers: ["WWW-Authenticate: Digest realm=\"stale\", nonce=\"n\(nonce)\", qop=\"auth\"\(answered ? ", stale=true" : "")"],
                         body: "who are you?")
        case "/basic-or-digest":
            // Basic offered first, Digest second, in fields of their own: the answer says which was taken.
            if let authorization = request.header("authorization") {
                Self.respond(context, body: "welcome \(authorization.prefix { $0 != " " })")
            } else {
                Self.respond(context, status: "401 Unauthorized",
                             headers: ["WWW-Authenticate: Basic realm=\"both\"",
                                       "WWW-Authenticate: Digest realm=\"both\", nonce=\"n\", qop=\"auth\", algorithm=SHA-256"],
                             body: "who are you?")
            }
        case "/loop":
            Self.respond(context, status: "302 Found", headers: ["Location: /loop"], body: "")
        case "/post-303":
            Self.respond(context, status: "303 See Other", headers: ["Location: /echo"], body: "")
        case "/post-307":
            Self.respond(context, status: "307 Temporary Redirect", headers: ["Location: /echo"], body: "")
        case "/to-area":
            // A trailing-slash redirect as nginx writes one: absolute, without the user information the request had.
            let port = context.channel.localAddress?.port ?? 0
            Self.respond(context, status: "301 Moved Permanently", headers: ["Location: http://127.0.0.1:\(port)/area/welcome"], body: "")
        case "/put-308-ftp":
            // A redirect that keeps the method and body, to an FTP server (nothing listens there).
            Self.respond(context, status: "308 Permanent Redirect", headers: ["Location: ftp://127.0.0.1:9/upload.bin"], body: "")
        default:
            if path.hasPrefix("/redirect/"), let hops = Int(path.dropFirst("/redirect/".count)) {
                if hops == 0 {
                    Self.respond(context, body: "arrived")
                } else {
                    Self.respond(context, status: "302 Found", headers: ["Location: /redirect/\(hops - 1)"], body: "")
                }
            } else if path.hasPrefix("/slow-redirect/"), let hops = Int(path.dropFirst("/slow-redirect/".count)) {
                // Each hop answers after 300 ms: quick enough for a request timeout, not for a chain's resource one.
                loop.scheduleTask(in: .milliseconds(300)) {
                    if hops == 0 {
                        Self.respond(bound.value, body: "arrived")
                    } else {
                        Self.respond(bound.value, status: "302 Found", headers: ["Location: /slow-redirect/\(hops - 1)"], body: "")
                    }
                }
            } else if path == "/basic-then-stale" {
                // Basic first; a Basic answer is met with a Digest challenge marked stale, which only a Digest
                // answer can have earned. A Digest answer, right or wrong, passes.
                let authorization = request.header("authorization") ?? ""
                if authorization.hasPrefix("Digest ") {
                    Self.respond(context, body: "digest answered")
                } else if authorization.hasPrefix("Basic ") {
                    Self.respond(context, status: "401 Unauthorized",
                                 headers: ["WWW-Authenticate: Digest realm=\"stale\", nonce=\"n2\", qop=\"auth\", stale=true"], body: "stale?")
                } else {
                    Self.respond(context, status: "401 Unauthorized", headers: ["WWW-Authenticate: Basic realm=\"stale\""], body: "who?")
                }
            } else if path.hasPrefix("/area/") {
                // Basic, realm "area": user "u" with the password "p", or the one a `password=` query names. The
                // answer is the Authorization field that was accepted.
                let password = path.split(separator: "?").dropFirst().first.flatMap { query in
                    query.split(separator: "&").first { $0.hasPrefix("password=") }?.dropFirst("password=".count)
                } ?? "p"
                let expected = "Basic " + Data("u:\(password)".utf8).base64EncodedString()
                let authorization = request.header("authorization")
                if path == "/area/forbidden", authorization != nil {
                    // Any credential is known here and none allowed.
                    Self.respond(context, status: "403 Forbidden", body: "not for you")
                } else if let authorization, authorization == expected {
                    if path == "/area/elsewhere" {
                        // To the same server under another name: another origin.
                        let port = context.channel.localAddress?.port ?? 0
                        Self.respond(context, status: "302 Found", headers: ["Location: http://localhost:\(port)/area/echo-headers"], body: "")
                    } else if path == "/area/echo-headers" {
                        Self.respond(context, body: request.headers.map { "\($0.0.lowercased()): \($0.1)" }.joined(separator: "\n"))
                    } else {
                        Self.respond(context, body: "welcome \(authorization)")
                    }
                } else {
                    counters.areaChallenges.wrappingAdd(1, ordering: .relaxed)
                    Self.respond(context, status: "401 Unauthorized", headers: ["WWW-Authenticate: Basic realm=\"area\""], body: "who are you?")
                }
            } else if path.hasPrefix("http://") {
                // A forward proxy asking for Basic credentials u:p (realm "scripted proxy"), as RFC 9110 has it:
                // 407 and Proxy-Authenticate. With them, or for a target holding `/open`, it answers the request's
                // target itself.
                if path.contains("/secret") { counters.secretRequests.wrappingAdd(1, ordering: .relaxed) }
                if path.contains("/open") || request.header("proxy-authorization") == "Basic " + Data("u:p".utf8).base64EncodedString() {
                    Self.respond(context, body: "proxied \(path)")
                } else {
                    Self.respond(context, status: "407 Proxy Authentication Required",
                                 headers: ["Proxy-Authenticate: Basic realm=\"scripted proxy\""], body: "credentials, please")
                }
            } else if path.hasPrefix("/to-other-origin/") {
                // Redirect to the same server under another host name: a different origin.
                let port = context.channel.localAddress?.port ?? 0
                Self.respond(context, status: "302 Found", headers: ["Location: http://localhost:\(port)/echo-headers"], body: "")
            } else {
                Self.respond(context, status: "404 Not Found", body: "no script for \(path)")
            }
        }
    }

    /// Sends chunks of `size` bytes every `interval` until the connection closes, as a live stream would: only
    /// while the channel is writable, so that a client that stops reading (or is slowed down, under the thread
    /// sanitizer) makes this server wait rather than pile up writes. Without that check a held stream took
    /// gigabytes and kept one of the shared event loops busy building them, and every test on that loop (the
    /// loader's own connections too) then timed out.
    private static func streamForever(_ bound: NIOLoopBound<ChannelHandlerContext>, loop: any EventLoop,
                                      chunk size: Int = 16 * 1024, every interval: TimeAmount = .milliseconds(1)) {
        let context = bound.value
        let chunk = context.channel.allocator.buffer(string: String(size, radix: 16) + "\r\n" + String(repeating: "e", count: size) + "\r\n")
        keepStreaming(bound, loop: loop, chunk: chunk, every: interval)
    }

    private static func keepStreaming(_ bound: NIOLoopBound<ChannelHandlerContext>, loop: any EventLoop,
                                      chunk: ByteBuffer, every interval: TimeAmount) {
        let context = bound.value
        guard context.channel.isActive else { return }
        if context.channel.isWritable {
            context.writeAndFlush(NIOAny(chunk), promise: nil)
        }
        loop.scheduleTask(in: interval) { keepStreaming(bound, loop: loop, chunk: chunk, every: interval) }
    }
}

/// An ephemeral session with the HTTP handler alone and no trust roots of its own: for the scripted server, and
/// for the test servers' plain-HTTP ports.
func plainHTTPSession(delegate: (any LoaderSessionDelegate)? = nil,
                      configure: (inout LoaderSession.Configuration) -> Void = { _ in }) -> LoaderSession {
    var configuration = LoaderSession.Configuration.ephemeral
    configuration.handlerClasses = [HTTPSchemeHandler.self]
    configure(&configuration)
    return LoaderSession(configuration: configuration, delegate: delegate)
}
