import NIOCore

/// The first handler of an open WebSocket's pipeline (next to the socket, after TLS): counts the bytes handed to the
/// socket and, while some wait to be written, looks every so often whether any left (``WriteStallClock``). When none
/// has for the clock's limit, the server has stopped reading: `stalled` is told and the channel closed, which fails
/// the write a `send` waits for. Without it a `send` to such a server, and a ping queued behind it, would wait forever.
final class SocketWriteWatch: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var clock: WriteStallClock
    private var handed: UInt64 = 0
    private var look: Scheduled<Void>?
    private let stalled: @Sendable () -> Void

    /// Closes the channel when handed bytes wait `limit` with none leaving, after calling `stalled`.
    init(limit: TimeAmount, stalled: @escaping @Sendable () -> Void) {
        clock = WriteStallClock(limit: limit)
        self.stalled = stalled
    }

    /// How often to look: often enough to end a stall soon after its limit, rarely enough to cost nothing.
    private var interval: TimeAmount {
        .nanoseconds(min(max(clock.limit.nanoseconds / 4, 50_000_000), 1_000_000_000))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        handed += UInt64(unwrapOutboundIn(data).readableBytes)
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        if look == nil { lookAgain(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        look?.cancel()
        look = nil
    }

    private func lookAgain(context: ChannelHandlerContext) {
        let waiting = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        switch clock.look(handed: handed, waiting: waiting, at: .now()) {
        case .clear:
            look = nil
        case .waiting:
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            look = context.eventLoop.scheduleTask(in: interval) {
                bound.value.0.lookAgain(context: bound.value.1)
            }
        case .stalled:
            look = nil
            stalled()
            context.close(promise: nil)
        }
    }
}
