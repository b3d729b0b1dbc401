import Foundation

/// Ports on 127.0.0.1 for tests of refused connections and of ports taken.
public enum LoopbackPorts {
    /// A TCP port on 127.0.0.1 that nothing listens on: bound by the kernel's choice, noted, closed.
    public static func closed() -> Int {
        let (fd, port) = bound()
        close(fd)
        return port
    }

    /// A TCP port on 127.0.0.1 that a socket of the test's own listens on, so that nothing else can take it; close
    /// `fd` when done.
    public static func held() -> (port: Int, fd: Int32) {
        let (fd, port) = bound()
        _ = listen(fd, 1)
        return (port, fd)
    }

    /// A socket bound to a port of the kernel's choice on 127.0.0.1, and the port.
    private static func bound() -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
