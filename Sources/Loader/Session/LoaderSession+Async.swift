import FoundationEssentials
import HTTPTypes
import SystemPackage

// These entry points are `@concurrent`, as URLSession's are: a caller on the main actor is not held up while a
// body is copied or a file written. Past them, the package's async functions run wherever their caller runs
// (`NonisolatedNonsendingByDefault`), which spares an executor switch at each call of the request's path.
extension LoaderSession {
    // MARK: Whole bodies

    /// Loads `request` and returns its whole body with the response.
    ///
    /// A status such as HTTP 404 is a response, not an error; a failure to load (a missing file, a
    /// refused connection, cancellation) throws a ``LoadError`` naming the URL.
    /// - Parameters:
    ///   - request: What to load.
    ///   - delegate: Hears this task's events before the session's delegate.
    @concurrent public func data(for request: LoadRequest, delegate: (any LoadTaskDelegate)? = nil) async throws -> (Data, LoadResponse) {
        try await loadData(request, delegate: delegate)
    }

    /// Loads `url` with `GET` and returns its whole body with the response.
    @concurrent public func data(from url: URL, delegate: (any LoadTaskDelegate)? = nil) async throws -> (Data, LoadResponse) {
        try await loadData(request(for: url), delegate: delegate)
    }

    /// Sends `bodyData` with `request` (a `PUT` or `POST`) and returns the response's whole body.
    @concurrent public func upload(for request: LoadRequest, from bodyData: Data, delegate: (any LoadTaskDelegate)? = nil) async throws -> (Data, LoadResponse) {
        var request = request
        request.body = .bytes(bodyData)
        return try await loadData(request, delegate: delegate)
    }

    /// Sends the file at `fileURL` with `request`, read as it is sent, and returns the response's whole body.
    @concurrent public func upload(for request: LoadRequest, fromFile fileURL: URL, delegate: (any LoadTaskDelegate)? = nil) async throws -> (Data, LoadResponse) {
        var request = request
        request.body = .file(fileURL)
        return try await loadData(request, delegate: delegate)
    }

    // MARK: Downloads

    /// Loads `request` into a new temporary file and returns the file's URL with the response.
    ///
    /// Bytes are written as they arrive, so memory stays bounded for any size. The caller owns the file
    /// (move or delete it). On failure the partial file is removed and the error names the URL.
    @concurrent public func download(for request: LoadRequest, delegate: (any LoadTaskDelegate)? = nil) async throws -> (URL, LoadResponse) {
        try await loadFile(request, delegate: delegate)
    }

    /// Loads `url` with `GET` into a new temporary file; see ``download(for:delegate:)``.
    @concurrent public func download(from url: URL, delegate: (any LoadTaskDelegate)? = nil) async throws -> (URL, LoadResponse) {
        try await loadFile(request(for: url), delegate: delegate)
    }

    // MARK: Streams

    /// Loads `request` and returns as soon as the response head arrives, with the body as a byte stream.
    ///
    /// Read `bytes` (or `bytes.lines`) to the end; the task completes when the stream ends. Stopping early
    /// (leaving the loop, dropping the stream) cancels the load.
    @concurrent public func bytes(for request: LoadRequest, delegate: (any LoadTaskDelegate)? = nil) async throws -> (LoadBytes, LoadResponse) {
        try await loadStream(request, delegate: delegate)
    }

    /// Loads `url` with `GET` as a byte stream; see ``bytes(for:delegate:)``.
    @concurrent public func bytes(from url: URL, delegate: (any LoadTaskDelegate)? = nil) async throws -> (LoadBytes, LoadResponse) {
        try await loadStream(request(for: url), delegate: delegate)
    }

    // MARK: Helpers

    // The public methods above hop off the caller's actor once; these run where they are called.

    /// What ``data(for:delegate:)`` does: ``perform(_:delegate:consume:)`` for a whole body, without the
    /// closure, whose frames (two, 672 bytes) were allocated on every load.
    func loadData(_ request: LoadRequest, delegate: (any LoadTaskDelegate)?) async throws -> (Data, LoadResponse) {
        let task = makeTask(request, delegate: delegate, starter: nil)
        return try await withTaskCancellationHandler {
            try await runData(task)
        } onCancel: {
            task.cancel()
        }
    }

    /// ``run(_:consume:)`` for a whole body.
    @inline(never)
    private func runData(_ task: LoadTask) async throws -> (Data, LoadResponse) {
        do {
            let result = try await open(task)
            let data = try await Self.collect(result, into: task)
            if let error = task.complete(with: nil) { throw error }
            return (data, result.response)
        } catch {
            throw Self.fail(task, with: error)
        }
    }

    /// What ``download(for:delegate:)`` does.
    func loadFile(_ request: LoadRequest, delegate: (any LoadTaskDelegate)?) async throws -> (URL, LoadResponse) {
        let directory = configuration.temporaryDirectory
        return try await perform(request, delegate: delegate) { task, result in
            (try await Self.write(result, to: directory, task: task), result.response)
        } undo: { written in
            try? FileManager.default.removeItem(at: written.0)
        }
    }

    /// What ``bytes(for:delegate:)`` does.
    func loadStream(_ request: LoadRequest, delegate: (any LoadTaskDelegate)?) async throws -> (LoadBytes, LoadResponse) {
        let task = makeTask(request, delegate: delegate, starter: nil)
        let result: LoadResult
        do {
            result = try await withTaskCancellationHandler {
                try await open(task)
            } onCancel: {
                task.cancel()
            }
        } catch {
            let failure = LoadError.wrapping(error, url: request.url)
            throw task.complete(with: failure) ?? failure
        }
        return (LoadBytes(body: result.body, task: task), result.response)
    }

    func request(for url: URL) -> LoadRequest {
        var request = LoadRequest(url: url, cachePolicy: configuration.requestCachePolicy)
        // Set while the storage is this request's alone: preparing the request for the chain then copies nothing.
        request.sessionIdentifier = identifier
        return request
    }

    /// Reads a body into memory, reporting each chunk to the task.
    static func collect(_ result: LoadResult, into task: LoadTask, keep: Bool = true) async throws -> Data {
        var data = Data()
        let expected = result.response.expectedContentLength.map { Int(min($0, 64 * 1024 * 1024)) } ?? 0
        for try await chunk in result.body {
            try task.checkCancelled()
            if keep, data.isEmpty, chunk.count >= expected {
                // A body that comes in one chunk (most small ones) is kept as it came, not copied.
                data = chunk
            } else if keep {
                if data.isEmpty { data.reserveCapacity(expected) }
                data.append(chunk)
            }
            task.didReceive(chunk, notify: true)
            await task.waitWhileSuspended()
        }
        return data
    }

    /// Writes a body to a new file in `directory`, in batches of about 256 KiB.
    static func write(_ result: LoadResult, to directory: URL, task: LoadTask) async throws -> URL {
        let file = directory.appendingPathComponent("loader-\(UUID().uuidString).tmp")
        let url = task.currentRequest.url
        let handle: FileDescriptor
        do {
            handle = try FileDescriptor.open(FilePath(file.path), .writeOnly, options: [.create, .exclusiveCreate],
                                             permissions: [.ownerReadWrite])
        } catch {
            result.body.discard()
            throw LoadError(.cannotCreateFile, url: url, reason: "cannot create \(file.path): \(error)", underlying: error)
        }
        do {
            var closed = false
            defer { if !closed { try? handle.close() } }
            var batch = Data()
            func flush() throws {
                guard !batch.isEmpty else { return }
                do {
                    _ = try batch.withUnsafeBytes { try handle.writeAll($0) }
                } catch {
                    throw LoadError(.cannotWriteToFile, url: url, reason: "cannot write \(file.path): \(error)", underlying: error)
                }
                task.didWrite(Int64(batch.count))
                batch.removeAll(keepingCapacity: true)
            }
            for try await chunk in result.body {
                try task.checkCancelled(url)
                if batch.isEmpty && chunk.count >= 128 * 1024 {
                    batch = chunk
                } else {
                    batch.append(chunk)
                }
                if batch.count >= 128 * 1024 { try flush() }
                await task.waitWhileSuspended()
            }
            try flush()
            // No fsync, as curl and URLSession: the file is the caller's to keep or move. A full disk shows
            // at write (ext4 reserves blocks then); a network file system may only tell at close.
            closed = true
            do {
                try handle.close()
            } catch {
                throw LoadError(.cannotWriteToFile, url: url, reason: "cannot finish writing \(file.path): \(error)", underlying: error)
            }
        } catch {
            result.body.discard()
            try? FileManager.default.removeItem(at: file)
            throw error
        }
        return file
    }
}
