import NIOCore
import NIOPosix
import Synchronization

/// A listening socket on 127.0.0.1 whose connections get the handlers `setUp` adds, told each connection's number
/// (from 0, in the order accepted). It counts them, and stops listening when let go of.
final class CountingListener: Sendable {
    let port: Int
    private let channel: any Channel
    private let accepted: Counter

    init(setUp: @escaping @Sendable (ChannelPipeline.SynchronousOperations, Int) throws -> Void) throws {
        let accepted = Counter()
        channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let number = accepted.value.wrappingAdd(1, ordering: .relaxed).oldValue
                return channel.eventLoop.makeCompletedFuture { try setUp(channel.pipeline.syncOperations, number) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress!.port!
        self.accepted = accepted
    }

    deinit {
        channel.close(promise: nil)
    }

    /// The connections accepted so far.
    var acceptedCount: Int { accepted.value.load(ordering: .relaxed) }

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }
}
