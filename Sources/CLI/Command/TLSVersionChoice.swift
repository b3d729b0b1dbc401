import ArgumentParser
import Loader

/// `--tlsv1.2` and `--tlsv1.3`, curl's: the lowest TLS version a transfer accepts, the last given winning.
public enum TLSVersionChoice: String, EnumerableFlag, Sendable {
    /// TLS 1.2 or later (the default without either).
    case tlsv1_2
    /// TLS 1.3 alone.
    case tlsv1_3

    /// `--tlsv1.2` and `--tlsv1.3`.
    public static func name(for value: TLSVersionChoice) -> NameSpecification {
        switch value {
        case .tlsv1_2: .customLong("tlsv1.2")
        case .tlsv1_3: .customLong("tlsv1.3")
        }
    }

    /// What `--help` says of each.
    public static func help(for value: TLSVersionChoice) -> ArgumentHelp? {
        switch value {
        case .tlsv1_2: "Use TLS 1.2 or later (https, wss, FTPS; the default)."
        case .tlsv1_3: "Use TLS 1.3 or later (https, wss, FTPS)."
        }
    }

    /// The handlers' setting.
    var version: TLSProtocolVersion {
        switch self {
        case .tlsv1_2: .tls12
        case .tlsv1_3: .tls13
        }
    }

    /// `--tls-max`'s version: `1.2`, `1.3`, or `default` (the highest this build speaks), as curl takes it. `1.0` and
    /// `1.1` are below any version this tool speaks: a usage error that says so.
    static func maximum(_ text: String) throws -> TLSProtocolVersion {
        switch text {
        case "1.2": return .tls12
        case "1.3", "default": return .tls13
        case "1.0", "1.1": throw ValidationError("--tls-max \(text) is below TLS 1.2, the lowest version this tool speaks")
        default: throw ValidationError("--tls-max wants 1.2, 1.3 or default, not '\(text)'")
        }
    }
}
