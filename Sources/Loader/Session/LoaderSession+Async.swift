import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
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
    /// (move or delete it). On failure the error names the URL; the partial file is removed, unless the error
    /// carries ``LoadError/resumeData`` to go on from it (``download(resumeFrom:delegate:)``), which then names
    /// the file for the app to resume from or delete.
    @concurrent public func download(for request: LoadRequest, delegate: (any LoadTaskDelegate)? = nil) async throws -> (URL, LoadResponse) {
        try await loadFile(request, delegate: delegate)
    }

    /// Loads `url` with `GET` into a new temporary file; see ``download(for:delegate:)``.
    @concurrent public func download(from url: URL, delegate: (any LoadTaskDelegate)? = nil) async throws -> (URL, LoadResponse) {
        try await loadFile(request(for: url), delegate: delegate)
    }

    /// Goes on with a download that stopped part way (``LoadError/resumeData``): asks for the bytes after those
    /// of the partial file on condition that the resource is unchanged (`Range`, `If-Range`), appends them, and
    /// returns the partial file, now whole, with the server's response (a `206`). If the resource changed, the
    /// server sends it whole (a `200`), which replaces the partial file's bytes. Fails as a download does,
    /// with new resume data when it stops part way again, or with the same resume data when it failed before
    /// touching the file (a server that cannot be reached); resume data whose file is missing, shorter than it
    /// says, or outside the session's temporary directory fails at once.
    @concurrent public func download(resumeFrom resumeData: ResumeData, delegate: (any LoadTaskDelegate)? = nil) async throws -> (URL, LoadResponse) {
        try checkResumable(resumeData)
        return try await loadFile(resumeRequest(resumeData), delegate: delegate, resuming: resumeData)
    }

    /// The request for the rest of a download: its bytes after those kept, if the resource is unchanged.
    func resumeRequest(_ resumeData: ResumeData) -> LoadRequest {
        var request = request(for: resumeData.url)
        // Filtered again: resume data may have been kept elsewhere, or written by hand.
        if let fields = resumeData.requestHeaderFields { request.headerFields.append(contentsOf: ResumeData.fieldsToKeep(fields)) }
        request.headerFields[.range] = "bytes=\(resumeData.bytesReceived)-"
        request.headerFields[.ifRange] = resumeData.validator
        return request
    }

    /// Throws unless `resumeData` names a regular file of this session's temporary directory, of the downloads'
    /// name, holding at least the bytes it says: resume data read back from storage must not make a download
    /// write into any other file.
    func checkResumable(_ resumeData: ResumeData) throws {
        let file = resumeData.partialFile.standardizedFileURL
        let url = resumeData.url
        guard resumeData.validator != nil else {
            throw LoadError(.badServerResponse, url: url, reason: "the resume data has no validator (ETag or Last-Modified) to resume on")
        }
        let folder = configuration.temporaryDirectory.standardizedFileURL.path
        // The path as given is the one opened: one with `..` or `.` in it could pass through a link elsewhere.
        guard resumeData.partialFile.path == file.path,
              file.isFileURL, file.deletingLastPathComponent().path == folder || file.deletingLastPathComponent().path + "/" == folder,
              file.lastPathComponent.hasPrefix("loader-"), file.lastPathComponent.hasSuffix(".tmp") else {
            throw LoadError(.cannotWriteToFile, url: url, reason: "the resume data names \(file.path), not a download file of the session's temporary directory")
        }
        var info = stat()
        guard lstat(file.path, &info) == 0 else {
            throw LoadError(.fileDoesNotExist, url: url, reason: "the partial file \(file.path) of the resume data is gone")
        }
        guard info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) >= resumeData.bytesReceived, resumeData.bytesReceived >= 0 else {
            throw LoadError(.fileDoesNotExist, url: url, reason: "the partial file \(file.path) does not hold the \(resumeData.bytesReceived) bytes the resume data says")
        }
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
            // Handed straight on: a result held in this frame would be one more copy of it on every load.
            return try await Self.collectWhole(open(task), into: task)
        } catch {
            throw await Self.failOnceHeard(task, with: error)
        }
    }

    /// Tells `task` of the head, reads the whole body, and completes the task.
    @inline(never)
    private static func collectWhole(_ result: LoadResult, into task: LoadTask) async throws -> (Data, LoadResponse) {
        let data: Data
        // A body that came whole (most small ones) is handed over without the reading loop, whose frames
        // (``collect(_:into:keep:)``'s and the iterator's), allocated on top of this one, took the load's task
        // past its allocator's slab; the task hears of the head and the body in one step.
        if let whole = result.body.whole {
            // As the reading loop does after each chunk: a delegate may have suspended the task as it heard of it.
            if task.hasDelegates {
                try await task.didReceiveWaitingForDelegates(result.response, wholeBody: whole)
            } else if try task.didReceive(result.response, wholeBody: whole) {
                await task.waitWhileSuspended()
            }
            data = whole
        } else {
            task.didReceive(result.response)
            await task.delegatesHeard()
            data = try await collect(result, into: task)
        }
        if let error = await task.completeOnceHeard(with: nil) { throw error }
        return (data, result.response)
    }

    /// What ``download(for:delegate:)`` does.
    func loadFile(_ request: LoadRequest, delegate: (any LoadTaskDelegate)?, resuming resume: ResumeData? = nil) async throws -> (URL, LoadResponse) {
        let directory = configuration.temporaryDirectory
        // What a download that stops part way leaves to resume from: until the write touches the file, the resume
        // data it started from.
        let partial = Locked<ResumeData?>(resume)
        do {
            return try await perform(request, delegate: delegate) { task, result in
                (try await Self.write(result, to: directory, task: task, resuming: resume, partial: partial), result.response)
            } undo: { written in
                Self.keepWhole(written.0, response: written.1, request: request, resuming: resume, in: partial)
            }
        } catch var error as LoadError {
            error.resumeData = partial.withLock { $0 }
            throw error
        }
    }

    /// A download's file, written whole, whose task then ended otherwise (cancelled at the last moment): kept to resume
    /// from when it can be (a resume then finds nothing left to fetch), its resume data put in `partial`, rather than
    /// losing its bytes; removed otherwise. A resumed download's partial file that the server's `416` found whole
    /// already stays, with the resume data it came with (which the error hands back).
    static func keepWhole(_ file: URL, response: LoadResponse, request: LoadRequest, resuming resume: ResumeData?, in partial: Locked<ResumeData?>) {
        if let resume, file == resume.partialFile, response.status?.code == 416 {
            partial.withLock { $0 = resume }
            return
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int64) ?? 0
        let offset = response.status?.code == 206 ? resume?.bytesReceived ?? 0 : 0
        if let whole = ResumeData.after(response, of: request, original: request, file: file, written: size - offset, offset: offset) {
            partial.withLock { $0 = whole }
        } else {
            try? FileManager.default.removeItem(at: file)
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
            task.didReceive(result.response)
        } catch {
            let failure = LoadError.wrapping(error, url: request.url)
            throw await task.completeOnceHeard(with: failure) ?? failure
        }
        await task.delegatesHeard()
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
            // What the delegates did as they heard of it (suspended or cancelled the task) counts before the next chunk.
            await task.delegatesHeard()
            await task.waitWhileSuspended()
        }
        return data
    }

    /// Writes a body to a new file in `directory`, in batches of about 128 KiB; or, resuming, to the partial file
    /// of `resume` (a `206` after its bytes, a `200` over them). A body that stops part way leaves its file and
    /// resume data in `partial` when the server can serve the rest (``ResumeData``), and removes the file otherwise.
    static func write(_ result: LoadResult, to directory: URL, task: LoadTask, resuming resume: ResumeData? = nil,
                      partial: Locked<ResumeData?>? = nil) async throws -> URL {
        let url = task.currentRequest.url
        let file: URL
        let handle: FileDescriptor
        var offset: Int64 = 0
        do {
            if let resume {
                guard let opened = try openPartial(resume, for: result, url: url) else {
                    // Nothing was left to fetch: the partial file is the whole body.
                    result.body.discard()
                    return resume.partialFile
                }
                (file, handle, offset) = (resume.partialFile, opened.handle, opened.start)
                // The whole file's size: a 206's Content-Range total (checked), else the 200's length.
                let total = offset > 0 ? result.response.headerFields[.contentRange].flatMap(ContentRange.init)?.complete
                                       : result.response.expectedContentLength
                task.didResume(at: offset, expectedTotal: total)
                await task.delegatesHeard()
            } else {
                file = directory.appendingPathComponent("loader-\(UUID().uuidString).tmp")
                do {
                    handle = try FileDescriptor.open(FilePath(file.path), .writeOnly, options: [.create, .exclusiveCreate, .closeOnExec],
                                                     permissions: [.ownerReadWrite])
                } catch {
                    throw LoadError(.cannotCreateFile, url: url, reason: "cannot create \(file.path): \(error)", underlying: error)
                }
            }
        } catch {
            result.body.discard()
            throw error
        }
        // From here the file is this attempt's: what it leaves to resume from is decided below.
        partial?.withLock { $0 = nil }
        var written: Int64 = 0
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
                written += Int64(batch.count)
                task.didWrite(Int64(batch.count))
                batch.removeAll(keepingCapacity: true)
            }
            do {
                for try await chunk in result.body {
                    try task.checkCancelled(url)
                    if batch.isEmpty && chunk.count >= 128 * 1024 {
                        batch = chunk
                    } else {
                        batch.append(chunk)
                    }
                    if batch.count >= 128 * 1024 { try flush() }
                    await task.delegatesHeard()
                    await task.waitWhileSuspended()
                }
            } catch {
                // The bytes that came whole are kept for resuming; a batch whose write failed part way is cut off
                // again, so that the file ends where `written` says.
                do { try flush() } catch { _ = try? handle.resize(to: offset + written) }
                // Not when the file itself could not be written (a full disk): its bytes go, to give the space back.
                guard (error as? LoadError)?.code != .cannotWriteToFile,
                      let resumable = ResumeData.after(result.response, of: task.currentRequest, original: task.originalRequest,
                                                        file: file, written: written, offset: offset) else {
                    throw error
                }
                partial?.withLock { $0 = resumable }
                // On the error itself too, so that the delegates that hear of it have it.
                guard var failure = error as? LoadError else { throw error }
                failure.resumeData = resumable
                throw failure
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
            if partial?.withLock({ $0 }) == nil { try? FileManager.default.removeItem(at: file) }
            throw error
        }
        return file
    }

    /// The partial file of `resume`, opened for what `result` brings: after its bytes for a `206` with the rest of
    /// the same representation (its range from where the file ends to the end, its total and validator as
    /// stored), over them for a `200` (the resource changed); `nil` for a `416` that says the file is whole
    /// already. Any other answer leaves the file as it was and fails.
    private static func openPartial(_ resume: ResumeData, for result: LoadResult, url: URL) throws -> (handle: FileDescriptor, start: Int64)? {
        let response = result.response
        let fields = response.headerFields
        let range = fields[.contentRange].flatMap(ContentRange.init)
        let start: Int64
        switch response.status?.code {
        case 206:
            let text = fields[.contentRange] ?? "no Content-Range"
            guard let range, range.first == resume.bytesReceived, let last = range.last,
                  range.complete.map({ last + 1 == $0 }) ?? false,
                  resume.expectedLength.map({ $0 == range.complete }) ?? true else {
                throw LoadError(.badServerResponse, url: url, reason: "the server resumed with '\(text)', not the rest from byte \(resume.bytesReceived)")
            }
            // A server that ignored If-Range must not have its bytes joined to another version's (RFC 9110 §15.3.7.3).
            let sameTag = resume.entityTag.map { $0 == fields[.eTag] } ?? true
            let sameDate = resume.entityTag != nil || resume.lastModified.map { $0 == fields[.lastModified] } ?? true
            let coding = fields[.contentEncoding]?.lowercased()
            guard sameTag, sameDate, coding == nil || coding == "identity" else {
                throw LoadError(.badServerResponse, url: url, reason: "the server resumed with another version of the resource (its validator or coding differs)")
            }
            start = resume.bytesReceived
        case 200:
            start = 0
        case 416 where range?.first == nil && range?.complete == resume.bytesReceived:
            return nil
        case let status:
            throw LoadError(.badServerResponse, url: url, reason: "the server answered the resumed download with \(status.map(String.init) ?? "no status"), not 206 or 200")
        }
        let file = resume.partialFile
        do {
            let handle = try FileDescriptor.open(FilePath(file.path), .writeOnly, options: [.noFollow, .nonBlocking, .closeOnExec])
            do {
                // The file checked when the resume was asked for, still: a regular file of one name, holding the
                // bytes to keep, that no other resume of the same data is writing.
                var info = stat()
                guard fstat(handle.rawValue, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1,
                      Int64(info.st_size) >= start else {
                    throw LoadError(.cannotWriteToFile, url: url, reason: "the partial file \(file.path) changed since its resume data was made")
                }
                guard flock(handle.rawValue, LOCK_EX | LOCK_NB) == 0 else {
                    throw LoadError(.cannotWriteToFile, url: url, reason: "the partial file \(file.path) is being resumed already")
                }
                // Anything past the resumed bytes (a write cut short) goes, then writing goes on at the end.
                _ = try handle.resize(to: start)
                _ = try handle.seek(offset: start, from: .start)
            } catch {
                try? handle.close()
                throw error
            }
            return (handle, start)
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError(.cannotWriteToFile, url: url, reason: "cannot reopen the partial file \(file.path): \(error)", underlying: error)
        }
    }
}
