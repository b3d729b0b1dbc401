import Foundation
import HTTPScheme
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The floor for our design: a minimal HTTP/1.1 client written directly on NIOPosix and NIOHTTP1, the
/// way DESIGN.md's measurements were made (a keep-alive pool, most recently used first; one continuation
/// per response; the body collected into `Data`). It has no session, task, middleware, registry or
/// handler, checks nothing and handles no error beyond failing: the gap between it and `loader` is what
/// those layers cost, measured on the same machine, servers and run.
final class MinimalNIOClient: BenchClient {
    let name: String
    let preferredExecutor: (any TaskExecutor)?
    private let idle = Mutex<[Connection]>([])

    /// One kept-alive connection and the handler at the end of its pipeline.
    private struct Connection: Sendable {
        let channel: any Channel
        let collector: Collector
    }

    /// - Parameter onEventLoop: Whether the scenario's tasks run on an HTTP event loop, as `loader-el`'s do.
    init(onEventLoop: Bool) {
        name = onEventLoop ? "nio-minimal-el" : "nio-minimal"
        preferredExecutor = onEventLoop ? HTTPSchemeHandler.taskExecutor() : nil
    }

    func get(_ url: URL) async throws -> Int {
        guard let host = url.host, let port = url.port else { throw BenchError.usage("nio-minimal needs a URL with a host and a port") }
        let connection = try await lease(host: host, port: port)
        var headers = HTTPHeaders()
        headers.add(name: "host", value: "\(host):\(port)")
        headers.add(name: "user-agent", value: "nio-minimal")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.path, headers: headers)
        let body = try await withCheckedThrowingContinuation { (done: CheckedContinuation<Data, any Error>) in
            let send = { @Sendable in
                connection.collector.begin(done) { [self] in idle.withLock { $0.append(connection) } }
                connection.channel.write(HTTPClientRequestPart.head(head), promise: nil)
                connection.channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            }
            if connection.channel.eventLoop.inEventLoop { send() } else { connection.channel.eventLoop.execute(send) }
        }
        return body.count
    }

    func stream(_ url: URL) async throws -> Int { throw BenchError.usage("nio-minimal measures whole GETs only") }
    func downloadToFile(_ url: URL) async throws -> URL { throw BenchError.usage("nio-minimal measures whole GETs only") }

    /// The most recently used idle connection (one on the caller's event loop first), or a new one.
    private func lease(host: String, port: Int) async throws -> Connection {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop
        let reused = idle.withLock { idle -> Connection? in
            if let loop, let index = idle.lastIndex(where: { $0.channel.eventLoop === loop }) { return idle.remove(at: index) }
            return idle.popLast()
        }
        if let reused { return reused }
        let channel = try await ClientBootstrap(group: loop ?? MultiThreadedEventLoopGroup.singleton.next())
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(Collector())
                }
            }
            .connect(host: host, port: port).get()
        let collector = try await channel.eventLoop.submit { try channel.pipeline.syncOperations.handler(type: Collector.self) }.get()
        return Connection(channel: channel, collector: collector)
    }
}

/// Collects one response at a time and hands it to the waiting request, after giving the connection back.
// @unchecked: touched only on its channel's event loop.
private final class Collector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart

    private var waiter: CheckedContinuation<Data, any Error>?
    private var release: (@Sendable () -> Void)?
    private var body = Data()
    private var keepAlive = true

    func begin(_ waiter: CheckedContinuation<Data, any Error>, release: @escaping @Sendable () -> Void) {
        self.waiter = waiter
        self.release = release
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            body = Data()
            keepAlive = head.isKeepAlive
            if let length = head.headers.first(name: "content-length").flatMap(Int.init) { body.reserveCapacity(length) }
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            let (waiter, release, body) = (self.waiter, self.release, self.body)
            (self.waiter, self.release, self.body) = (nil, nil, Data())
            if keepAlive { release?() } else { context.close(promise: nil) }
            waiter?.resume(returning: body)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        waiter?.resume(throwing: error)
        waiter = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        waiter?.resume(throwing: ChannelError.eof)
        waiter = nil
    }
}
