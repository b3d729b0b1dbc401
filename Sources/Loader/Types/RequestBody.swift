import FoundationEssentials
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a request sends: bytes in memory, a file read as it is sent, or an async stream.
public enum RequestBody: Sendable {
    /// Bytes held in memory.
    case bytes(Data)
    /// A file, read in chunks while it is sent.
    case file(URL)
    /// A stream of chunks. `makeStream` is called each time the body must be sent from its start
    /// (a redirect that keeps the body calls it again); `length` is its size when known.
    case stream(length: Int64?, makeStream: @Sendable () -> AsyncThrowingStream<Data, any Error>)

    /// The body's size when it is known before sending: the data's count, the file's size, or the
    /// stream's announced length. `nil` for a file whose size says nothing of what reading it gives (a pipe,
    /// `/dev/stdin`, a file of /proc or /sys): such a body is sent chunked, or checked against no length.
    public var knownLength: Int64? {
        switch self {
        case .bytes(let data): return Int64(data.count)
        case .file(let url):
            var info = stat()
            return stat(url.path, &info) == 0 ? FileSize.readable(info, path: url.path) : nil
        case .stream(let length, _): return length
        }
    }

    /// Whether the body can be sent again from its start, as a redirect that keeps it (307, 308), an answer
    /// to a challenge or a retry on a new connection must: bytes can, and so can a stream (its `makeStream`
    /// is called again); a file only if it is a regular file. A pipe, a FIFO or `/dev/stdin` would give only
    /// what is left of it, and a request sent with part of its body is a silent loss.
    public var canBeSentAgain: Bool {
        guard case .file(let url) = self else { return true }
        var info = stat()
        return stat(url.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The error of a load that would have to send this body again for `purpose` and cannot (curl fails
    /// there too, "necessary data rewind wasn't possible"); it names `url` and the file.
    package func notSentAgain(to url: URL, for purpose: String) -> LoadError {
        let what = if case .file(let file) = self { "the upload \(file.path), not a regular file," } else { "the request body" }
        return LoadError(.requestBodyStreamExhausted, url: url, reason: "\(purpose) needs the request body again, and \(what) cannot be read again")
    }

    /// The body as chunks of at most `chunkSize` bytes, read lazily.
    ///
    /// A file that cannot be opened or read, or a stream that throws, fails the sequence with
    /// ``LoadError/Code/requestBodyStreamExhausted``, whose reason names the file or the stream's error (a
    /// stream's `LoadError` or cancellation passes through as it is). The error carries no URL:
    /// the load that sends the body fills in its own (``LoadError/wrapping(_:url:)``), so that the failure is
    /// reported against the request, not the file.
    public func chunks(chunkSize: Int = 256 * 1024) -> RequestBodyChunks {
        RequestBodyChunks(body: self, chunkSize: max(1, chunkSize))
    }
}

/// The chunks of a ``RequestBody``, produced on demand so that a large file is never held whole.
public struct RequestBodyChunks: AsyncSequence, Sendable {
    /// A chunk of the body.
    public typealias Element = Data
    let body: RequestBody
    let chunkSize: Int

    /// Starts reading the body from its beginning.
    public func makeAsyncIterator() -> Iterator {
        switch body {
        case .bytes(let data): return Iterator(source: .bytes(data, offset: 0), chunkSize: chunkSize)
        case .file(let url): return Iterator(source: .file(url, nil), chunkSize: chunkSize)
        case .stream(_, let make): return Iterator(source: .stream(make().makeAsyncIterator()), chunkSize: chunkSize)
        }
    }

    /// Reads the next chunk of a request body.
    public struct Iterator: AsyncIteratorProtocol {
        enum Source {
            case bytes(Data, offset: Int)
            case file(URL, OpenFile?)
            case stream(AsyncThrowingStream<Data, any Error>.AsyncIterator)
            case done
        }
        var source: Source
        let chunkSize: Int

        /// The next chunk, or `nil` at the end of the body. `@concurrent`: a file is read with blocking
        /// calls, which must not hold up the caller's actor.
        @concurrent public mutating func next() async throws -> Data? {
            switch source {
            case .done:
                return nil
            case .bytes(let data, let offset):
                guard offset < data.count else { source = .done; return nil }
                let end = Swift.min(data.count, offset + chunkSize)
                source = .bytes(data, offset: end)
                let start = data.startIndex + offset
                return data[start..<(data.startIndex + end)]
            case .file(let url, let existing):
                do {
                    let file = try existing ?? OpenFile(FileDescriptor.open(FilePath(url.path), .readOnly))
                    let chunk = try file.read(upTo: chunkSize)
                    guard !chunk.isEmpty else {
                        source = .done  // closes the file
                        return nil
                    }
                    source = .file(url, file)
                    return chunk
                } catch {
                    source = .done
                    throw LoadError(.requestBodyStreamExhausted, reason: "cannot read the upload file \(url.path)", underlying: error)
                }
            case .stream(var iterator):
                do {
                    let chunk = try await iterator.next(isolation: #isolation)
                    source = chunk == nil ? .done : .stream(iterator)
                    return chunk
                } catch let error as LoadError {
                    source = .done
                    throw error
                } catch is CancellationError {
                    source = .done
                    throw CancellationError()
                } catch {
                    // The app's own error, as the cause of the code a failed body has (not `unknown`).
                    source = .done
                    throw LoadError(.requestBodyStreamExhausted, reason: "the request body's stream failed: \(error)", underlying: error)
                }
            }
        }
    }
}

/// A file descriptor that closes itself when the last reference goes: an iterator abandoned halfway
/// through a body leaks nothing. Package-wide: the CLI's `-F` reads its files through it too.
package final class OpenFile: Sendable {
    package let descriptor: FileDescriptor

    package init(_ descriptor: FileDescriptor) { self.descriptor = descriptor }

    deinit { try? descriptor.close() }

    /// Up to `count` bytes from the current offset; empty at the end of the file.
    package func read(upTo count: Int) throws -> Data {
        var data = Data(count: count)
        let read = try data.withUnsafeMutableBytes { try descriptor.read(into: $0) }
        data.removeSubrange(read...)
        return data
    }
}
