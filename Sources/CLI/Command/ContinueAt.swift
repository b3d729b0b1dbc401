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
/// starts at the offset is appended, and over HTTP only if the resource is unmodified since the partial file
/// was written (`If-Unmodified-Since`). A whole body (a server that ignores ranges), another status, a changed
/// resource, or a range that starts elsewhere leaves the file as it was and fails with 33 (curl's "cannot
/// resume"); a file that is already whole (an HTTP 416 whose length is the offset, or for other schemes a size
/// that is the offset) succeeds with nothing written; an offset past the end fails with 36.
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

    /// Where the download to `path` goes on from (`nil`: standard output, which has no size, so `-` asks for all,
    /// as it does for a path that is not a file yet), and the time the partial file was last written (for
    /// `If-Unmodified-Since`). Throws ``Failure`` when `-C N` names another offset than the file's size: the bytes
    /// from N on, appended, would repeat some or leave a gap.
    func start(writingTo path: String?, url: URL) throws(Failure) -> (offset: Int64, written: Int?) {
        var info = stat()
        let exists = path.map { stat($0, &info) == 0 && info.st_mode & S_IFMT == S_IFREG } ?? false
        let size = exists ? Int64(info.st_size) : nil
        let written = exists ? Int(info.st_mtim.tv_sec) : nil
        switch origin {
        case .outputFile:
            return (size ?? 0, written)
        case .offset(let offset):
            if let size, let path, size != offset {
                throw Failure(error: LoadError(.cannotWriteToFile, url: url, reason: "\(path) holds \(size) bytes, not \(offset): going on from byte \(offset) would repeat or skip bytes (-C - goes on from its end)"),
                              status: Self.rangeError)
            }
            return (offset, written)
        }
    }

    /// What to do with a response to a request for the bytes from an offset on.
    enum Verdict: Equatable {
        /// The body is the rest: append it.
        case append
        /// The output is whole already: write nothing, succeed.
        case complete
        /// The output cannot be resumed from this answer: leave it, and fail with this reason and curl's status
        /// (``rangeError``: the answer cannot be appended; ``pastTheEnd``: the offset is past the resource's end).
        case refuse(String, status: Int32)
        /// A handler without statuses (`file:`, `ftp:`) sent no range from the offset: the resource's size decides
        /// (``verdict(size:offset:)``, from a `HEAD`).
        case askSize
    }

    /// Judges `response` to a request for the bytes from `offset` on.
    static func verdict(on response: LoadResponse, offset: Int64) -> Verdict {
        let fields = response.headerFields
        let range = fields[.contentRange].flatMap(ContentRange.init)
        if let status = response.status?.code {
            switch status {
            case 206:
                // Several ranges in one body (a server that merged or split them) are no rest to append.
                if fields[.contentType]?.lowercased().hasPrefix("multipart/byteranges") == true {
                    return .refuse("the server sent several ranges (multipart), not the rest from byte \(offset)", status: rangeError)
                }
                // A coding of the rest (none was asked for) is not the bytes that follow those here.
                if let coding = fields[.contentEncoding], coding.lowercased() != "identity" {
                    return .refuse("the server sent the rest encoded (\(coding)), not as the bytes that follow", status: rangeError)
                }
            case 412:
                return .refuse("the file changed on the server since the partial file was written (412; -H 'If-Unmodified-Since:' goes on without asking)",
                               status: rangeError)
            case 416:
                guard let complete = range?.complete else {
                    return .refuse("the server refused the range from byte \(offset) and did not say the file's length", status: rangeError)
                }
                return verdict(size: complete, offset: offset)
            case 200..<300:
                return .refuse("the server does not serve byte ranges (it sent the whole file, status \(status))", status: rangeError)
            default:
                return .refuse("the server answered \(status) to the request for the bytes from \(offset) on", status: rangeError)
            }
            guard let first = range?.first else {
                return .refuse("the server's 206 does not say where its bytes start", status: rangeError)
            }
            return first == offset ? .append : .refuse("the server's answer starts at byte \(first), not at \(offset)", status: rangeError)
        }
        return range?.first == offset ? .append : .askSize
    }

    /// Judges a resource of `size` bytes (`nil`: not told) for a download that holds `offset` of them.
    static func verdict(size: Int64?, offset: Int64) -> Verdict {
        guard let size else { return .refuse("the handler sent other than the bytes from \(offset) on, and not the size", status: rangeError) }
        if size == offset { return .complete }
        if size < offset { return .refuse("the resource is \(size) bytes, and \(offset) are here already", status: pastTheEnd) }
        return .refuse("the handler sent other than the bytes from \(offset) on of its \(size)", status: rangeError)
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
