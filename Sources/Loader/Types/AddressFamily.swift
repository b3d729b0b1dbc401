/// Which IP version a handler's connections use: curl's `-4` and `-6`. A handler that connects by host name looks
/// up only that version's addresses, so a name without one fails as a name that cannot be found.
public enum AddressFamily: Sendable, Hashable {
    /// Either version, whichever addresses the name has.
    case any
    /// IPv4 addresses alone (curl's `-4`).
    case ipv4
    /// IPv6 addresses alone (curl's `-6`).
    case ipv6
}
