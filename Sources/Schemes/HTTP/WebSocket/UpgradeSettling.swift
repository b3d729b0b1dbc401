import NIOCore
import NIOHTTP1

extension ChannelPipeline {
    /// Runs `body` on the loop once NIO's client upgrade handler has left this pipeline (an upgrade under way has
    /// put the WebSocket handlers in place and handed on the bytes it held back), or after `turns` turns of the
    /// loop when it stays (no upgrade is under way). For a close that came while the handshake was settling.
    func afterUpgradeSettles(turns: Int = 16, _ body: @escaping @Sendable () -> Void) {
        eventLoop.execute {
            let upgrading = (try? self.syncOperations.handler(type: NIOHTTPClientUpgradeHandler.self)) != nil
            if upgrading, turns > 0 { self.afterUpgradeSettles(turns: turns - 1, body) } else { body() }
        }
    }
}
