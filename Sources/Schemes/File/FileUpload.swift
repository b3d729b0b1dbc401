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

/// A PUT to a `file:` URL: the body goes to a temporary file beside the target, which is flushed and
/// renamed over the target only when every byte is written (and as many as the body announced).
///
/// A target that is a symbolic link is written through: the file it leads to is replaced, the link stays.
/// A target that exists keeps its permission bits (a private file stays private, a script executable) and, as far as
/// the caller may give them, its owner and group; one the caller may not write is refused, as opening it would be.
/// A target that is not a regular file (a device such as `/dev/null`, a named pipe) is written into, as curl does,
/// never replaced by a file; while a pipe is full the task sleeps, so a cancel or the request timeout ends the
/// upload, and a pipe whose reader went fails the upload without a `SIGPIPE` (``PipeWriter``). So is a file of a
/// pseudo file system (`/proc`, `/sys`, a cgroup's), where no file can be made beside it, and a file the caller may
/// write in a folder where it may make none: those are written in place, truncated first, as curl writes every file
/// (what was written before a failure stays written).
struct FileUpload {
    let path: String
    let url: URL
    let handler: SchemeHandler

    func run() async throws {
        let destination = Self.resolvingLink(path)
        var info = stat()
        let exists = stat(destination, &info) == 0
        let kind = info.st_mode & S_IFMT
        if exists, kind == S_IFDIR {
            throw FileErrors.error(.fileIsDirectory, EISDIR, path: path, url: url)
        }
        if exists, kind != S_IFREG || FileSize.readable(info, path: destination) == nil {
            try await writeInPlace(destination, truncating: kind == S_IFREG)
        } else {
            // rename() asks only for the folder's permission: the file's own is checked here, as open() would.
            if exists, access(destination, W_OK) != 0 { throw FileErrors.writing(errno, path: path, url: url) }
            try await replace(destination, keepingModeOf: exists ? info : nil)
        }
        var fields = HTTPFields()
        fields[.contentLength] = "0"
        handler.client.handler(handler, didReceive: LoadResponse(url: url, status: nil, headerFields: fields))
    }

    /// Writes the body to a temporary file beside `destination` and renames it over `destination`; into
    /// `destination` itself when it exists and no file may be made beside it.
    private func replace(_ destination: String, keepingModeOf existing: stat?) async throws {
        let temporary = Self.temporaryPath(beside: destination)
        // A new file gets the usual 0666 less the umask; one replaced, the bits it had.
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard fd >= 0 else {
            let code = errno
            // The folder refuses a new file, the file itself takes writing (access() said so above).
            if existing != nil, code == EACCES || code == EPERM { return try await writeInPlace(destination, truncating: true) }
            throw FileErrors.writing(code, path: path, url: url)
        }
        if let existing {
            // Its owner and group as far as the caller may give them (root may; others, a group of theirs), then the
            // permission bits (and the sticky bit), not set-user-ID or set-group-ID: new contents must not inherit
            // the privileges the old ones were given.
            if fchown(fd, existing.st_uid, existing.st_gid) != 0 { _ = fchown(fd, uid_t.max, existing.st_gid) }
            _ = fchmod(fd, existing.st_mode & 0o1777)
        }
        var closed = false
        do {
            defer { if !closed { close(fd) } }
            try await send(to: fd, leftAs: "\(path) is left as it was")
            guard fsync(fd) == 0 else { throw FileErrors.writing(errno, path: path, url: url) }
            closed = true
            guard close(fd) == 0 else { throw FileErrors.writing(errno, path: path, url: url) }
            // A load cancelled while the file was flushed ends cancelled with the target untouched.
            try Task.checkCancellation()
            guard rename(temporary, destination) == 0 else { throw FileErrors.writing(errno, path: path, url: url) }
        } catch {
            unlink(temporary)
            throw LoadError.wrapping(error, url: url)
        }
    }

    /// A name for the temporary file beside `destination`: hidden, and within the 255 bytes a name may have however
    /// long the target's is.
    static func temporaryPath(beside destination: String) -> String {
        let target = URL(fileURLWithPath: destination)
        let suffix = ".\(UInt32.random(in: 0...UInt32.max)).partial"
        // Cut where a character begins, counting bytes as they are written.
        var room = 255 - 1 - suffix.utf8.count
        var name = String.UnicodeScalarView()
        for scalar in target.lastPathComponent.unicodeScalars {
            room -= UTF8.width(scalar)
            guard room >= 0 else { break }
            name.append(scalar)
        }
        return target.deletingLastPathComponent().appendingPathComponent("." + String(name) + suffix).path
    }

    /// Writes the body into the device, pipe or (`truncating` it first) file at `destination`. A pipe that no process
    /// reads fails at once (`ENXIO`) instead of waiting for a reader that may never come.
    private func writeInPlace(_ destination: String, truncating: Bool) async throws {
        let fd = open(destination, O_WRONLY | O_NONBLOCK | O_CLOEXEC | (truncating ? O_TRUNC : 0))
        guard fd >= 0 else {
            let code = errno
            guard code != ENXIO else {
                throw LoadError(.cannotWriteToFile, url: url, reason: "\(path) is a named pipe that no process reads",
                                underlying: POSIXError(.ENXIO))
            }
            throw FileErrors.writing(code, path: path, url: url)
        }
        defer { close(fd) }
        // Left without blocking: while the reader has no room, the task waits asleep (``PipeWriter``).
        do {
            try await send(to: fd, leftAs: "what was written to \(path) stays written")
        } catch {
            throw LoadError.wrapping(error, url: url)
        }
    }

    /// Writes the whole body to `fd`, reporting progress; fails if it gave fewer bytes than it announced.
    private func send(to fd: Int32, leftAs outcome: String) async throws {
        let expected = handler.request.body?.knownLength
        var total: Int64 = 0
        if let body = handler.request.body {
            for try await chunk in body.chunks() {
                try Task.checkCancellation()
                try await write(chunk, to: fd)
                total += Int64(chunk.count)
                handler.client.handler(handler, didSendBodyData: total, totalBytesExpectedToSend: expected)
            }
        }
        if let expected, total != expected {
            // A stream that ended early, or a file that shrank while sent.
            throw LoadError(.requestBodyStreamExhausted, url: url, reason: "the body gave \(total) of its announced \(expected) bytes; \(outcome)")
        }
    }

    /// The file a symbolic link at `path` leads to, or `path` itself when it is not a link. A link to nothing
    /// yet leads to the path it names (made absolute against the link's folder), which the upload creates,
    /// as writing through the link would.
    private static func resolvingLink(_ path: String) -> String {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return path }
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        guard let named = try? FileManager.default.destinationOfSymbolicLink(atPath: path) else { return path }
        return named.hasPrefix("/") ? named : URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(named).path
    }

    /// Writes all of `data`, waiting asleep while a pipe's reader has no room (``PipeWriter``).
    private func write(_ data: Data, to fd: Int32) async throws {
        do {
            try await PipeWriter.writeAll(data, to: fd)
        } catch let failure as PipeWriter.Failure {
            throw FileErrors.writing(failure.code, path: path, url: url)
        }
    }
}
