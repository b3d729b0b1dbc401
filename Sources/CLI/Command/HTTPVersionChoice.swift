import ArgumentParser

/// The HTTP versions a transfer offers or speaks, as curl's `--http2`, `--http1.1` and `--http2-prior-knowledge`
/// choose them.
public enum HTTPVersionChoice: String, EnumerableFlag, Sendable {
    /// HTTP/2 and HTTP/1.1 offered by ALPN; the server chooses (the default).
    case http2
    /// HTTP/1.1 alone.
    case http1_1
    /// HTTP/2 for `http` too, from the first byte (cleartext, no upgrade); `https` offers it as with ``http2``.
    case http2PriorKnowledge

    /// `--http2`, `--http1.1` and `--http2-prior-knowledge`.
    public static func name(for value: HTTPVersionChoice) -> NameSpecification {
        switch value {
        case .http2: .customLong("http2")
        case .http1_1: .customLong("http1.1")
        case .http2PriorKnowledge: .customLong("http2-prior-knowledge")
        }
    }

    /// What `--help` says of each.
    public static func help(for value: HTTPVersionChoice) -> ArgumentHelp? {
        switch value {
        case .http2: "Offer HTTP/2 for https, the server choosing (the default)."
        case .http1_1: "Use HTTP/1.1 only."
        case .http2PriorKnowledge: "Speak HTTP/2 to http servers from the first byte (cleartext, no upgrade)."
        }
    }
}
