#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader
import NIOCore
import NIOPosix

/// Looks up addresses for NIO's connect when one IP version is asked for (``HTTPClientOptions/addressFamily``; the
/// other version's query fails at once, so NIO's Happy Eyeballs tries only the addresses asked for), or for a name it
/// answers itself. `getaddrinfo` blocks, so it
/// runs on NIO's thread pool, never on the event loop. `localhost` and the names under it are the loopback addresses
/// without a lookup (RFC 6761 §6.3), as curl and browsers answer them: a system whose hosts file names no `::1` for
/// `localhost` still reaches it over IPv6, and `app.localhost` is not asked of DNS.
struct FamilyResolver: Resolver, Sendable {
    /// The version looked up: `.ipv4`, `.ipv6`, or `.any` for both (a name under `localhost`).
    let family: AddressFamily
    /// The loop the connect runs on, which the answers complete on.
    let loop: any EventLoop

    /// A query for the version not asked for.
    struct Excluded: Error, CustomStringConvertible {
        var description: String { "an address of the other IP version, not asked for" }
    }

    /// Why `getaddrinfo` found nothing, in the C library's words.
    struct LookupFailed: Error, CustomStringConvertible {
        let description: String
    }

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        family != .ipv6 ? lookUp(host, port: port, family: AF_INET) : loop.makeFailedFuture(Excluded())
    }

    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        family != .ipv4 ? lookUp(host, port: port, family: AF_INET6) : loop.makeFailedFuture(Excluded())
    }

    /// `host` in lower case without its root dot, when it is `localhost` or a name under it (`app.localhost`); else `nil`.
    private static func localhostName(_ host: String) -> String? {
        let name = (host.hasSuffix(".") ? host.dropLast() : Substring(host)).lowercased()
        return name == "localhost" || (name.count > 10 && name.hasSuffix(".localhost")) ? name : nil
    }

    /// Whether this resolver answers `host` whatever the version asked for: a name under `localhost`, or `localhost.`
    /// written with its root dot, which the system's resolver does not find. Plain `localhost` goes to the system's.
    static func answersItself(_ host: String) -> Bool {
        guard let name = localhostName(host) else { return false }
        return name != "localhost" || host.hasSuffix(".")
    }

    /// The loopback address of `family` when `host` is `localhost` or a name under it, else `nil`.
    private static func loopback(_ host: String, port: Int, family: Int32) -> [SocketAddress]? {
        guard localhostName(host) != nil else { return nil }
        let ipv6 = try? SocketAddress(ipAddress: "::1", port: port)
        let ipv4 = try? SocketAddress(ipAddress: "127.0.0.1", port: port)
        switch family {
        case AF_INET: return ipv4.map { [$0] }
        case AF_INET6: return ipv6.map { [$0] }
        // Either (a SOCKS proxy's address, which takes the first): IPv4 first, as most hosts files list `localhost` there.
        // NIO's Happy Eyeballs asks each version apart, and tries ::1 first.
        default: return [ipv4, ipv6].compactMap { $0 }
        }
    }

    /// Nothing to stop: a lookup under way ends on its own, and its answer is dropped.
    func cancelQueries() {}

    private func lookUp(_ host: String, port: Int, family: Int32) -> EventLoopFuture<[SocketAddress]> {
        NIOThreadPool.singleton.runIfActive(eventLoop: loop) { try Self.addresses(of: host, port: port, family: family) }
    }

    /// `host`'s addresses of `family` (`AF_INET`, `AF_INET6` or `AF_UNSPEC`), with `port`; an address written as text is
    /// taken as it is when it is of that family, and `localhost` and the names under it are the loopback addresses.
    static func addresses(of host: String, port: Int, family: Int32) throws -> [SocketAddress] {
        if let loopback = loopback(host, port: port, family: family) { return loopback }
        var hints = addrinfo()
        hints.ai_family = family
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        #else
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else {
            throw LookupFailed(description: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry?.pointee {
            if let address = info.ai_addr {
                switch info.ai_family {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { addresses.append(SocketAddress($0.pointee, host: host)) }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { addresses.append(SocketAddress($0.pointee, host: host)) }
                default:
                    break
                }
            }
            entry = info.ai_next
        }
        guard !addresses.isEmpty else { throw LookupFailed(description: "no address of that version") }
        return addresses
    }
}
