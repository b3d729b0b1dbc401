import Foundation
import TestSupport

/// What dante's log (``TestServers/Proxies/socksLog``) says from now on: the log is the proxy's whole life, the CLI
/// tests' loads too, so only what comes after the length it had when this was made counts.
struct SOCKSLog {
    let path: String
    /// The log's length when this was made.
    let mark: Int

    init(_ path: String) {
        self.path = path
        mark = (try? Data(contentsOf: URL(fileURLWithPath: path)).count) ?? 0
    }

    /// Whether the proxy said, since the mark, that it opened a tunnel to 127.0.0.1's `port` (dante writes
    /// `127.0.0.1.PORT`), for the client connection from 127.0.0.1's `clientPort` when one is given (the line begins
    /// with the client's address: other tests' tunnels to the same port do not count then); waits up to 5 s for the
    /// line, which dante may write after the load ended.
    func tunnelled(to port: Int, from clientPort: Int? = nil) async -> Bool {
        await eventually(within: 5) {
            let data = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            let text = String(decoding: data.dropFirst(mark), as: UTF8.self)
            return text.split(separator: "\n").contains { line in
                line.contains("pass(") && line.hasSuffix(" 127.0.0.1.\(port)")
                    && clientPort.map { line.contains("[: 127.0.0.1.\($0) ") } ?? true
            }
        }
    }
}
