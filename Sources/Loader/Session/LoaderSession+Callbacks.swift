import FoundationEssentials

extension LoaderSession {
    /// A suspended task that loads `request` and calls `completionHandler` with the whole body.
    /// Call ``LoadTask/resume()`` to start it. The handler is called exactly once, also on cancellation.
    public func dataTask(
        with request: LoadRequest,
        completionHandler: @escaping @Sendable (Data?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        callbackTask(request) { task, result in
            try await Self.collect(result, into: task)
        } completion: { data, task, error in
            completionHandler(data, task.response, error)
        }
    }

    /// A suspended task that loads `url` and calls `completionHandler` with the whole body.
    public func dataTask(
        with url: URL,
        completionHandler: @escaping @Sendable (Data?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        dataTask(with: request(for: url), completionHandler: completionHandler)
    }

    /// A suspended task whose events go only to delegates: each body chunk to `loadTask(_:didReceive:)`,
    /// nothing held in memory.
    public func dataTask(with request: LoadRequest, delegate: (any LoadTaskDelegate)? = nil) -> LoadTask {
        callbackTask(request, delegate: delegate) { task, result in
            _ = try await Self.collect(result, into: task, keep: false)
        } completion: { _, _, _ in }
    }

    /// A suspended task that sends `bodyData` with `request` and calls `completionHandler` with the response body.
    public func uploadTask(
        with request: LoadRequest,
        from bodyData: Data,
        completionHandler: @escaping @Sendable (Data?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        var request = request
        request.body = .bytes(bodyData)
        return dataTask(with: request, completionHandler: completionHandler)
    }

    /// A suspended task that sends the file at `fileURL` with `request` and calls `completionHandler`.
    public func uploadTask(
        with request: LoadRequest,
        fromFile fileURL: URL,
        completionHandler: @escaping @Sendable (Data?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        var request = request
        request.body = .file(fileURL)
        return dataTask(with: request, completionHandler: completionHandler)
    }

    /// A suspended task that downloads `request` into a temporary file and calls `completionHandler` with
    /// its URL. As with URLSession, the file is removed when the handler returns: move it to keep it.
    /// A download that stops part way hands the handler an error with ``LoadError/resumeData`` when it can be
    /// resumed (``downloadTask(withResumeData:completionHandler:)``); its partial file is then kept.
    public func downloadTask(
        with request: LoadRequest,
        completionHandler: @escaping @Sendable (URL?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        downloadTask(request, resuming: nil, completionHandler: completionHandler)
    }

    /// A suspended task that goes on with a download that stopped part way; see
    /// ``download(resumeFrom:delegate:)``. As with any download task, the file is removed when the handler
    /// returns: move it to keep it.
    public func downloadTask(
        withResumeData resumeData: ResumeData,
        completionHandler: @escaping @Sendable (URL?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        var refusal: LoadError?
        do { try checkResumable(resumeData) } catch { refusal = LoadError.wrapping(error, url: resumeData.url) }
        return downloadTask(resumeRequest(resumeData), resuming: resumeData, refusal: refusal, completionHandler: completionHandler)
    }

    private func downloadTask(
        _ request: LoadRequest,
        resuming resume: ResumeData?,
        refusal: LoadError? = nil,
        completionHandler: @escaping @Sendable (URL?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        let directory = configuration.temporaryDirectory
        let partial = Locked<ResumeData?>(resume)
        return callbackTask(request, refusal: refusal) { task, result in
            (try await Self.write(result, to: directory, task: task, resuming: resume, partial: partial), result.response)
        } undo: { written in
            // As the async call's: whole but cancelled at the last moment, kept to resume from when it can be.
            Self.keepWhole(written.0, response: written.1, request: request, resuming: resume, in: partial)
        } completion: { written, task, error in
            var error = error
            if refusal == nil { error?.resumeData = partial.withLock { $0 } }
            completionHandler(written?.0, task.response, error)
            if let file = written?.0 { try? FileManager.default.removeItem(at: file) }
        }
    }

    /// A suspended download task for `url`; see ``downloadTask(with:completionHandler:)``.
    public func downloadTask(
        with url: URL,
        completionHandler: @escaping @Sendable (URL?, LoadResponse?, LoadError?) -> Void
    ) -> LoadTask {
        downloadTask(with: request(for: url), completionHandler: completionHandler)
    }

    /// `refusal`: an error the task ends with when resumed, before any load (resume data that may not be used).
    private func callbackTask<Value: Sendable>(
        _ request: LoadRequest,
        delegate: (any LoadTaskDelegate)? = nil,
        refusal: LoadError? = nil,
        consume: @escaping @Sendable (LoadTask, LoadResult) async throws -> Value,
        undo: (@Sendable (Value) -> Void)? = nil,
        completion: @escaping @Sendable (Value?, LoadTask, LoadError?) -> Void
    ) -> LoadTask {
        makeTask(request, delegate: delegate) { task in
            let session = task.session
            // Counted until its completion handler has run, so that the session's delegate hears it became invalid after
            // the last handler, as URLSession's does (the task itself completes first).
            // Joined even once invalidated: the task is still among the running, so the report has not gone out yet.
            let member = session.join(cancel: {}, evenIfInvalidated: true)
            if let refusal {
                completion(nil, task, Self.fail(task, with: refusal))
                if let member { session.leave(member) }
                return
            }
            task.setSwiftTask(Task {
                do {
                    let value = try await session.run(task, consume: consume, undo: undo)
                    completion(value, task, nil)
                } catch {
                    completion(nil, task, LoadError.wrapping(error, url: request.url))
                }
                if let member { session.leave(member) }
            })
        }
    }
}
