import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Loader

/// `-C`/`--continue-at`: where a download goes on from, as curl's option says it. `-C -` goes on from the end of
/// the output file as it is; `-C N` from byte N. The request then asks for the rest (`Range: bytes=N-`), and the
/// body is appended to the output file, which is never truncated.
///
/// What the answer may be is stricter than curl, so that a partial file is never spoiled: only a range that
/// starts at the offset is appended. A whole body (a server that ignores ranges), another status, or a range
/// that starts elsewhere leaves the file as it was and fails with 33 (curl's "cannot resume"); a file that is
/// already whole (an HTTP 416 whose length is the offset, or for other schemes a last byte that ends at the
/// offset) succeeds with nothing written.
struct ContinueAt: Equatable, Sendable {
    /// Where the offset comes from.
    enum Origin: Equatable, Sendable {
        /// The size of the output file (`-`).
        case outputFile
        /// A byte offset given on the command line.
        case offset(Int64)
    }

    let origin: Origin

    /// Reads the option's value: `-` or a byte offset of zero or more.
    init?(_ text: String) {
        if text == "-" {
            origin = .outputFile
        } else if let offset = Int64(text), offset >= 0 {
            origin = .offset(offset)
        } else {
            return nil
        }
    }

    /// The offset for a download to `path` (`nil`: standard output, which has no size, so `-` asks for all, as
    /// it does for a path that is not a regular file yet).
    func offset(writingTo path: String?) -> Int64 {
        switch origin {
        case .offset(let offset): return offset
        case .outputFile:
            var info = stat()
            guard let path, stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return 0 }
            return Int64(info.st_size)
        }
    }

    /// What to do with a response to a request for the bytes from `offset` on.
    enum Verdict: Equatable {
        /// The body is the rest: append it.
        case append
        /// The output is whole already: write nothing, succeed.
        case complete
        /// The output cannot be resumed from this answer: leave it, and fail with this reason and curl's status
        /// (33: the answer cannot be appended; 36: the offset is past the resource's end).
        case refuse(String, status: Int32)
    }

    /// Judges `response` to a request for the bytes from `offset` on.
    static func verdict(on response: LoadResponse, offset: Int64) -> Verdict {
        let range = response.headerFields[.contentRange].flatMap(ContentRange.init)
        if let status = response.status?.code {
            switch status {
            case 206:
                break
            case 416:
                guard let complete = range?.complete else {
                    return .refuse("the server refused the range from byte \(offset) and did not say the file's length", status: rangeError)
                }
                return complete == offset ? .complete
                    : .refuse("the file is \(complete) bytes on the server, and \(offset) are here already", status: pastTheEnd)
            case 200..<300:
                return .refuse("the server does not serve byte ranges (it sent the whole file, status \(status))", status: rangeError)
            default:
                return .refuse("the server answered \(status) to the request for the bytes from \(offset) on", status: rangeError)
            }
        }
        guard let range else {
            return .refuse("the \(response.url.scheme ?? "URL")'s handler sent the whole resource, not the bytes from \(offset) on", status: rangeError)
        }
        // Nothing from the offset on, of a resource that long (an FTP file already whole).
        if range.first == nil, range.complete == offset { return .complete }
        guard range.first == offset else {
            return .refuse("the answer starts at byte \(range.first.map(String.init) ?? "?"), not at \(offset)", status: rangeError)
        }
        return .append
    }

    /// A request for the last byte before `offset`: for a handler with no status to say a range is past the
    /// end (`file:`, `ftp:`), whether the resource ends at `offset` (its output is whole) or before it.
    static func lastByteRequest(_ request: LoadRequest, offset: Int64) -> LoadRequest {
        var probe = request
        probe.headerFields[.range] = "bytes=\(offset - 1)-"
        return probe
    }

    /// Whether `response` to ``lastByteRequest(_:offset:)`` says the resource is `offset` bytes long.
    static func endsAt(_ offset: Int64, _ response: LoadResponse) -> Bool {
        guard let range = response.headerFields[.contentRange].flatMap(ContentRange.init) else { return false }
        return range.complete == offset && range.first == offset - 1
    }

    /// curl's status when the answer is not the rest asked for (CURLE_RANGE_ERROR).
    static let rangeError: Int32 = 33
    /// curl's status when the offset is past the resource's end (CURLE_BAD_DOWNLOAD_RESUME).
    static let pastTheEnd: Int32 = 36

    /// A download that could not go on; the file is left as it was.
    struct Failure: Error {
        /// The error to report, naming the URL.
        let error: LoadError
        /// curl's status for it: ``rangeError`` or ``pastTheEnd``.
        let status: Int32
    }
}
