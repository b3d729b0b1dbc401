/// The SOCKS4 and SOCKS4a exchange that opens a tunnel: one request (`CONNECT` to an IPv4 address and port, with a
/// user ID; for SOCKS4a, the address `0.0.0.1` and the server's name after the user ID, for the proxy to resolve),
/// one 8-byte reply whose second byte says granted (90) or why not. A plain value: ``SOCKS4Handler`` does the I/O.
struct SOCKS4Handshake {
    /// What a reply (whole or not yet) says.
    enum Outcome: Equatable {
        /// The reply is not whole yet.
        case wait
        /// The tunnel is open; `extra` counts bytes that came after the reply, which no server may send before the
        /// client's first bytes.
        case granted(extra: Int)
        /// The proxy said no: its reply code (91 refused or could not connect, 92 and 93 about identd).
        case refused(UInt8)
        /// The reply is not SOCKS4's (its first byte, which must be 0).
        case malformed(UInt8)
    }

    /// Where the tunnel goes.
    enum Target: Equatable {
        /// An IPv4 address, four bytes (SOCKS4).
        case address([UInt8])
        /// A name for the proxy to resolve (SOCKS4a).
        case name(String)
    }

    /// Why a request cannot be written.
    enum Unsendable: Error, Equatable {
        /// The user ID holds a NUL byte, which ends the field, or is longer than `SOCKS4Handshake.longestField` bytes.
        case userID
        /// The name holds a NUL byte, or is longer than `SOCKS4Handshake.longestField` bytes.
        case name
        /// An IPv6 address, which SOCKS4 cannot carry.
        case notIPv4
    }

    /// The longest user ID or name sent: curl's limit for each, and far more than any host name needs.
    static let longestField = 255

    /// The request's bytes.
    let request: [UInt8]
    private var received: [UInt8] = []

    /// The request to reach `target` at `port` as `userID` (empty when none).
    init(target: Target, port: Int, userID: String) throws(Unsendable) {
        let user = Array(userID.utf8)
        guard !user.contains(0), user.count <= Self.longestField else { throw .userID }
        var bytes: [UInt8] = [4, 1, UInt8(truncatingIfNeeded: port >> 8), UInt8(truncatingIfNeeded: port)]
        switch target {
        case .address(let address):
            guard address.count == 4 else { throw .notIPv4 }
            bytes += address + user + [0]
        case .name(let name):
            let host = Array(name.utf8)
            guard !host.contains(0), host.count <= Self.longestField else { throw .name }
            // 0.0.0.x with x not 0: "the name follows" (SOCKS4a).
            bytes += [0, 0, 0, 1] + user + [0] + host + [0]
        }
        request = bytes
    }

    /// What the proxy's reply says, with `bytes` the next that came.
    mutating func receive(_ bytes: some Sequence<UInt8>) -> Outcome {
        received += bytes
        guard received.count >= 8 else { return .wait }
        guard received[0] == 0 else { return .malformed(received[0]) }
        guard received[1] == 90 else { return .refused(received[1]) }
        return .granted(extra: received.count - 8)
    }

    /// What a refusal's code means, for messages.
    static func meaning(of code: UInt8) -> String {
        switch code {
        case 91: "refused the request or could not connect"
        case 92: "could not reach the identd of this machine to check the user ID"
        case 93: "found that identd reports another user ID than the one sent"
        default: "answered with an unknown code"
        }
    }
}
