import FoundationEssentials

/// A version of TLS: the lowest and highest a handler's settings accept, and the one a connection's handshake
/// settled on (``LoadTransactionMetrics/negotiatedTLSProtocolVersion``). Ordered, older first.
public enum TLSProtocolVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// TLS 1.2 (RFC 5246).
    case tls12
    /// TLS 1.3 (RFC 8446).
    case tls13

    /// The version as OpenSSL and curl's verbose output name it: `TLSv1.2`, `TLSv1.3`.
    public var description: String {
        switch self {
        case .tls12: "TLSv1.2"
        case .tls13: "TLSv1.3"
        }
    }

    /// Throws, for a load of `url`, unless some version lies from `lowest` through `highest`: settings with none fail
    /// each TLS load with ``LoadError/Code/secureConnectionFailed`` (curl's 35), before anything is sent.
    package static func check(from lowest: TLSProtocolVersion, through highest: TLSProtocolVersion, url: URL) throws(LoadError) {
        guard lowest <= highest else {
            throw LoadError(.secureConnectionFailed, url: url,
                            reason: "no TLS version to speak: the lowest allowed (\(lowest)) is above the highest (\(highest))")
        }
    }
}
