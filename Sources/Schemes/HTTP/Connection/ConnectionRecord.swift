import FoundationEssentials
import Loader

/// How a new connection was opened, told with the metrics of its first exchange: when the connect began and when the
/// connection was ready, when TLS began and ended and its version, and what an HTTP proxy and we said as it opened a tunnel (what
/// `-v` prints of it). Filled as the connection opens (the ``ProxyTunnelHandler`` writes the tunnel's lines).
final class ConnectionRecord: Sendable {
    /// What is known so far.
    struct Facts {
        var connectStart: Date?
        var secureConnectionStart: Date?
        var secureConnectionEnd: Date?
        var connectEnd: Date?
        /// The TLS version the handshake with the server settled on.
        var tlsVersion: TLSProtocolVersion?
        /// The `CONNECT` request and the proxy's answer, each line marked (`> ` sent, `< ` received).
        var tunnel: [String] = []
    }

    private let known = Locked(Facts())

    /// Changes what is known.
    func note(_ change: (inout Facts) -> Void) {
        known.withLock { change(&$0) }
    }

    /// What is known now.
    var facts: Facts { known.withLock { $0 } }
}
