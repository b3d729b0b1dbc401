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
import SystemPackage

/// A PUT to a `file:` URL: the body goes to a temporary file beside the target, which is flushed and
/// renamed over the target only when every byte is written.
struct FileUpload {
    let path: String
    let url: URL
    let handler: SchemeHandler

    func run() async throws {
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw FileErrors.error(.fileIsDirectory, EISDIR, path: path, url: url)
        }
        let target = URL(fileURLWithPath: path)
        let temporary = target.deletingLastPathComponent()
            .appendingPathComponent(".\(target.lastPathComponent).\(UInt32.random(in: 0...UInt32.max)).partial").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileErrors.writing(errno, path: path, url: url) }
        var closed = false
        do {
            defer { if !closed { close(fd) } }
            let expected = handler.request.body?.knownLength
            var total: Int64 = 0
            if let body = handler.request.body {
                for try await chunk in body.chunks() {
                    try Task.checkCancellation()
                    try write(chunk, to: FileDescriptor(rawValue: fd))
                    total += Int64(chunk.count)
                    handler.client.handler(handler, didSendBodyData: total, totalBytesExpectedToSend: expected)
                }
            }
            guard fsync(fd) == 0 else { throw FileErrors.writing(errno, path: path, url: url) }
            closed = true
            guard close(fd) == 0 else { throw FileErrors.writing(errno, path: path, url: url) }
            guard rename(temporary, path) == 0 else { throw FileErrors.writing(errno, path: path, url: url) }
        } catch {
            unlink(temporary)
            throw LoadError.wrapping(error, url: url)
        }
        var fields = HTTPFields()
        fields[.contentLength] = "0"
        handler.client.handler(handler, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
    }

    /// Writes all of `data` (swift-system retries short and interrupted writes).
    private func write(_ data: Data, to descriptor: FileDescriptor) throws {
        do {
            _ = try data.withUnsafeBytes { try descriptor.writeAll($0) }
        } catch let error as Errno {
            throw FileErrors.writing(error.rawValue, path: path, url: url)
        }
    }
}
