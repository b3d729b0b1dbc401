import NIOCore

/// The proxy's answer to `CONNECT`, read as it arrives: a status line and fields up to an empty line, no body
/// (RFC 9110 §9.3.6: a 2xx answer's connection is the tunnel from its next byte on).
struct TunnelResponse {
    /// The answer's head is at most this long; a proxy that says more is not followed.
    static let maximumHeadLength = 16 * 1024

    /// What the bytes read so far make.
    enum Outcome: Equatable {
        /// The head has not ended yet.
        case incomplete
        /// The head ended with this status code (and reason phrase); `extraBytes` came after it.
        case answered(status: Int, reason: String, extraBytes: Int)
        /// Not an HTTP answer, or one too long.
        case malformed(String)
    }

    private var head: [UInt8] = []

    /// Adds `buffer`'s bytes and says what the answer is so far.
    mutating func append(_ buffer: ByteBuffer) -> Outcome {
        let start = max(0, head.count - 3)
        head.append(contentsOf: buffer.readableBytesView)
        guard let end = Self.emptyLine(in: head, from: start) else {
            return head.count > Self.maximumHeadLength ? .malformed("the proxy's answer to CONNECT is longer than 16 KiB") : .incomplete
        }
        let statusLine = head[..<(head.firstIndex(of: UInt8(ascii: "\r")) ?? end)]
        let parts = statusLine.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/1.".utf8)), parts[1].count == 3,
              let status = Int(String(decoding: parts[1], as: UTF8.self)) else {
            return .malformed("the proxy's answer to CONNECT is not HTTP: '\(String(decoding: statusLine.prefix(80), as: UTF8.self))'")
        }
        let reason = parts.count > 2 ? String(decoding: parts[2], as: UTF8.self) : ""
        return .answered(status: status, reason: reason, extraBytes: head.count - end)
    }

    /// The answer's status line and field lines, as they came (at most 200 bytes of each); read once the head has ended.
    var headLines: [String] {
        guard let end = Self.emptyLine(in: head, from: 0) else { return [] }
        return String(decoding: head[..<end], as: UTF8.self).split(separator: "\r\n").map { String($0.prefix(200)) }
    }

    /// The values of the answer's fields named `name` (lowercase), in order; read once the head has ended.
    func fieldValues(named name: String) -> [String] {
        guard let end = Self.emptyLine(in: head, from: 0) else { return [] }
        let lines = String(decoding: head[..<end], as: UTF8.self).split(separator: "\r\n").dropFirst()
        return lines.compactMap { line -> String? in
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name else { return nil }
            return String(line[line.index(after: colon)...].trimmingSpaces())
        }
    }

    /// Where the bytes after the first `\r\n\r\n` at or after `start` begin.
    private static func emptyLine(in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = start
        while index + 4 <= bytes.count {
            if bytes[index] == 0x0D, bytes[index + 1] == 0x0A, bytes[index + 2] == 0x0D, bytes[index + 3] == 0x0A {
                return index + 4
            }
            index += 1
        }
        return nil
    }
}
