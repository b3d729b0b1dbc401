#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// IP address literals, read as a connection reads them (`inet_pton`): what proxy exceptions, SNI, SOCKS requests and
/// HSTS tell from host names.
package enum IPAddressText {
    /// The bytes of the IPv4 (4) or IPv6 (16) address `text` writes (no brackets), or `nil` for a name.
    package static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Whether `text` is an IPv4 or IPv6 address literal (no brackets).
    package static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
