import CCurl
import Loader

/// A transfer's talk with the server as libcurl's verbose mode passes it on: the commands sent and the lines of the
/// replies, kept for the transaction's metrics (``LoadTransactionMetrics/dialogue``, what `loadurl -v` prints).
/// Kept only when the load collects metrics; libcurl's verbose mode is off otherwise.
struct FTPDialogue {
    /// The most lines kept: a server may send a reply of any length, and the rest are counted, not kept.
    static let lineLimit = 1000
    /// The most bytes kept of one line (libcurl passes a reply line on whole, up to half its buffer): the rest is cut.
    static let lineLengthLimit = 512

    /// The lines, each after `> ` (sent) or `< ` (received).
    private var lines: [String] = []
    /// Lines past ``lineLimit``.
    private var dropped = 0
    /// Whether libcurl said it went on a connection it kept from an earlier transfer.
    private(set) var reusedConnection = false

    /// Notes what libcurl passed on: commands (`CURLINFO_HEADER_OUT`), reply lines (`CURLINFO_HEADER_IN`) and, of its
    /// own remarks, only that it reuses a connection. Data, TLS records and the rest are not part of the dialogue.
    mutating func note(_ type: curl_infotype, _ bytes: UnsafeRawBufferPointer) {
        switch type {
        case CURLINFO_HEADER_OUT: add(bytes, marker: "> ")
        case CURLINFO_HEADER_IN: add(bytes, marker: "< ")
        case CURLINFO_TEXT:
            // libcurl 7.x says "Re-using existing connection", 8.x "Reusing existing connection".
            if bytes.starts(with: "Re-using existing".utf8) || bytes.starts(with: "Reusing existing".utf8) { reusedConnection = true }
        default: break
        }
    }

    private mutating func add(_ bytes: UnsafeRawBufferPointer, marker: String) {
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard lines.count < Self.lineLimit else {
                dropped += 1
                continue
            }
            var text = String(String(decoding: line.prefix(Self.lineLengthLimit), as: UTF8.self).trimming(while: { $0 == "\r" }))
            guard !text.isEmpty else { continue }
            if line.count > Self.lineLengthLimit { text += "…" }
            // The password stays out of metrics and logs (curl's -v prints it; a delegate's record need not hold it).
            if marker == "> ", text.uppercased().hasPrefix("PASS ") || text.uppercased().hasPrefix("ACCT ") {
                text = String(text.prefix(4)) + " ****"
            }
            lines.append(marker + text)
        }
    }

    /// Whether anything was said: a transfer that reached no server has no dialogue to report.
    var isEmpty: Bool { lines.isEmpty }

    /// The lines in order, with a last one saying how many were not kept, if any.
    var all: [String] {
        dropped == 0 ? lines : lines + ["* \(dropped) more lines not kept"]
    }
}
