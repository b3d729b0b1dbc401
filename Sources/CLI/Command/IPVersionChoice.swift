import ArgumentParser
import Loader

/// `-4` and `-6`, curl's: which IP version connections use, the last given winning.
public enum IPVersionChoice: String, EnumerableFlag, Sendable {
    /// IPv4 alone.
    case ipv4
    /// IPv6 alone.
    case ipv6

    /// `-4`/`--ipv4` and `-6`/`--ipv6`.
    public static func name(for value: IPVersionChoice) -> NameSpecification {
        switch value {
        case .ipv4: [.customShort("4"), .customLong("ipv4")]
        case .ipv6: [.customShort("6"), .customLong("ipv6")]
        }
    }

    /// What `--help` says of each.
    public static func help(for value: IPVersionChoice) -> ArgumentHelp? {
        switch value {
        case .ipv4: "Resolve names to IPv4 addresses only (HTTP, HTTPS, WebSocket, FTP)."
        case .ipv6: "Resolve names to IPv6 addresses only (HTTP, HTTPS, WebSocket, FTP)."
        }
    }

    /// The handlers' setting.
    var family: AddressFamily {
        switch self {
        case .ipv4: .ipv4
        case .ipv6: .ipv6
        }
    }
}
