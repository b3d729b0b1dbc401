import ArgumentParser

/// How `-u`'s credentials answer an HTTP server, as curl's `--basic`, `--digest` and `--anyauth` choose.
public enum AuthMethodChoice: String, EnumerableFlag, Sendable {
    /// Basic, sent with the first request, unasked (the default).
    case basic
    /// Digest (RFC 7616), in answer to the server's challenge: the password stays off the wire.
    case digest
    /// Whichever the server asks for, Digest before Basic when it offers both.
    case anyauth

    /// `--basic`, `--digest` and `--anyauth`.
    public static func name(for value: AuthMethodChoice) -> NameSpecification {
        .customLong(value.rawValue)
    }

    /// What `--help` says of each.
    public static func help(for value: AuthMethodChoice) -> ArgumentHelp? {
        switch value {
        case .basic: "Send -u's credentials with Basic authentication (the default)."
        case .digest: "Answer the server's Digest challenge with -u's credentials."
        case .anyauth: "Answer whichever challenge the server makes (Digest before Basic) with -u's credentials."
        }
    }

    /// The protection spaces' methods the credentials may answer (``ProtectionSpace/authenticationMethod``).
    var answers: Set<String> {
        switch self {
        case .basic: ["Basic"]
        case .digest: ["Digest"]
        case .anyauth: ["Digest", "Basic"]
        }
    }
}
