import Loader

/// What passed between us and an HTTP proxy as it opened a tunnel (the `CONNECT` request and the proxy's answer), as
/// `-v` tells it: filled by the ``ProxyTunnelHandler``, read for the metrics of the first exchange on the connection
/// (``LoadTransactionMetrics/dialogue``).
final class TunnelTranscript: Sendable {
    private let lines = Locked<[String]>([])

    /// Adds lines, each already marked (`> ` sent, `< ` received).
    func append(_ more: [String]) {
        lines.withLock { $0.append(contentsOf: more) }
    }

    /// The lines so far.
    var all: [String] { lines.withLock { $0 } }
}
