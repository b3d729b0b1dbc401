import Foundation
import HTTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

@Suite("Downloads that stop part way, resumed")
struct HTTPResumeTests {
    /// A session whose downloads go to a folder of the test's own, to see what they leave.
    private func session(_ folder: URL) throws -> LoaderSession {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try Nginx.session { $0.temporaryDirectory = folder }
    }

    private func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("resume-\(UUID().uuidString)", isDirectory: true)
    }

    private static let original = Data((0..<1000).map { UInt8($0 % 251) })

    @Test("A connection lost after 400 of 1,000 bytes leaves resume data; resuming fetches the rest as a 206 and appends it")
    func lostThenResumed() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let url = ScriptedServer.shared.url("/resumable")
        let error = await loadError { _ = try await session.download(from: url) }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        let resume = try #require(error?.resumeData)
        #expect(resume.bytesReceived == 400)
        #expect(resume.entityTag == "\"v1\"")
        #expect(resume.expectedLength == 1000)
        #expect(try Data(contentsOf: resume.partialFile) == Self.original.prefix(400))
        let kept = try #require(ResumeData(data: resume.data))
        let (file, response) = try await session.download(resumeFrom: kept)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(response.status == .partialContent)
        #expect(file == resume.partialFile)
        #expect(Bytes.difference(try Data(contentsOf: file), Self.original) == nil)
    }

    @Test("The request's own fields go with the request for the rest (kept in the resume data's stored form); the credentials a layer answers and the session's fields do not")
    func fieldsKept() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let session = try Nginx.session {
            $0.temporaryDirectory = folder
            $0.additionalHeaderFields[HTTPField.Name("X-Session-Key")!] = "s1"
        }
        var request = LoadRequest(url: ScriptedServer.shared.url("/resumable-token"))
        request.headerFields[HTTPField.Name("X-Token")!] = "t1"
        request.headerFields[.accept] = "application/octet-stream"
        request.headerFields[.authorization] = "Bearer secret"
        let error = await loadError { _ = try await session.download(for: request) }
        let resume = try #require(error?.resumeData, "\(String(describing: error))")
        let kept = try #require(ResumeData(data: resume.data))
        #expect(kept.requestHeaderFields?[HTTPField.Name("X-Token")!] == "t1")
        #expect(kept.requestHeaderFields?[.accept] == "application/octet-stream")
        #expect(kept.requestHeaderFields?[.authorization] == nil, "a credential was kept in the resume data")
        #expect(kept.requestHeaderFields?[HTTPField.Name("X-Session-Key")!] == nil, "a field the session adds was kept")
        #expect(!String(decoding: kept.data, as: UTF8.self).contains("secret"))
        // The server serves the rest only to a request with the token: without it, a 403 and no whole file.
        let (file, response) = try await session.download(resumeFrom: kept)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(response.status == .partialContent)
        #expect(Bytes.difference(try Data(contentsOf: file), Self.original) == nil)
    }

    @Test("A resource that changed meanwhile comes whole (200) and replaces the partial bytes")
    func changedThenRestarted() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let error = await loadError { _ = try await session.download(from: ScriptedServer.shared.url("/resumable-changed")) }
        let resume = try #require(error?.resumeData)
        let (file, response) = try await session.download(resumeFrom: resume)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(response.status == .ok)
        #expect(try Data(contentsOf: file) == Data((0..<1000).map { UInt8(($0 + 7) % 251) }))
    }

    @Test("A download from nginx cancelled part way resumes from nginx to the whole file")
    func cancelledThenResumed() async throws {
        final class CancelPartWay: LoadTaskDelegate {
            /// What the delegate heard the task end with.
            let completed = Locked<LoadError?>(nil)
            func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?) {
                if totalBytesWritten >= 256 * 1024 { task.cancel() }
            }
            func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {
                completed.withLock { $0 = error }
            }
        }
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        // Served at 256 KiB/s: the cancel comes well before the end.
        let delegate = CancelPartWay()
        let error = await loadError { _ = try await session.download(from: Nginx.http("/slow/1m.bin"), delegate: delegate) }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        let resume = try #require(error?.resumeData)
        // The delegate hears the same resume data (a download manager keeps it from there).
        let heard = delegate.completed.withLock { $0 }
        #expect(heard?.code == .cancelled && heard?.resumeData?.bytesReceived == resume.bytesReceived, "\(String(describing: heard))")
        #expect(resume.bytesReceived >= 256 * 1024 && resume.bytesReceived < 1_048_576)
        #expect(resume.expectedLength == 1_048_576)
        final class Progress: LoadTaskDelegate {
            let resumedAt = Locked<(Int64, Int64?)?>(nil)
            let last = Locked<(Int64, Int64?)?>(nil)
            func loadTask(_ task: LoadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64?) {
                resumedAt.withLock { $0 = (fileOffset, expectedTotalBytes) }
            }
            func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?) {
                last.withLock { $0 = (totalBytesWritten, totalBytesExpectedToWrite) }
            }
        }
        let progress = Progress()
        let (file, response) = try await session.download(resumeFrom: resume, delegate: progress)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(response.status == .partialContent)
        let whole = try Data(contentsOf: URL(fileURLWithPath: try Nginx.require().root + "/1m.bin"))
        #expect(Bytes.difference(try Data(contentsOf: file), whole) == nil)
        // As URLSession tells it: the offset it went on from, then totals of the whole file.
        let resumedAt = progress.resumedAt.withLock { $0 }
        #expect(resumedAt?.0 == resume.bytesReceived && resumedAt?.1 == 1_048_576, "\(String(describing: resumedAt))")
        let last = progress.last.withLock { $0 }
        #expect(last?.0 == 1_048_576 && last?.1 == 1_048_576, "\(String(describing: last))")
    }

    @Test("Completion-handler download tasks hand over resume data and resume from it")
    func callbacks() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let first: LoadError? = await withCheckedContinuation { done in
            session.downloadTask(with: ScriptedServer.shared.url("/resumable")) { _, _, error in done.resume(returning: error) }.resume()
        }
        let resume = try #require(first?.resumeData)
        let resumed: (Data?, LoadResponse?) = await withCheckedContinuation { done in
            session.downloadTask(withResumeData: resume) { file, response, _ in
                done.resume(returning: (file.flatMap { try? Data(contentsOf: $0) }, response))
            }.resume()
        }
        #expect(resumed.0 == Self.original)
        #expect(resumed.1?.status == .partialContent)
        var outside = resume
        outside.partialFile = URL(fileURLWithPath: "/etc/hostname")
        let refused: LoadError? = await withCheckedContinuation { done in
            session.downloadTask(withResumeData: outside) { _, _, error in done.resume(returning: error) }.resume()
        }
        #expect(refused?.code == .cannotWriteToFile, "\(String(describing: refused))")
    }

    /// Cancels its task as soon as it hears of the response.
    private final class CancelAtResponse: LoaderSessionDelegate {
        func loadTask(_ task: LoadTask, didReceive response: LoadResponse) { task.cancel() }
    }

    /// Cancels its task as the last bytes are written.
    private final class CancelAtLastWrite: LoaderSessionDelegate {
        func loadTask(_ task: LoadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64?) {
            if totalBytesWritten == totalBytesExpectedToWrite { task.cancel() }
        }
    }

    @Test("A resume that finds the file whole (416) and is cancelled then keeps the file its resume data names, async and with a completion handler")
    func wholeResumeCancelled() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        // Completion-handler tasks have the session's delegate alone.
        let cancelling = LoaderSession(configuration: session.configuration, delegate: CancelAtResponse())
        let url = try Nginx.http("/1k.bin")
        // The whole file as a download cancelled at its very end leaves it: its resume data asks for the bytes after
        // the last, which nginx answers with a 416.
        let (body, head) = try await session.data(from: url)
        for callback in [false, true] {
            let file = folder.appendingPathComponent("loader-whole-\(callback).tmp")
            try body.write(to: file)
            let resume = ResumeData(url: url, partialFile: file, bytesReceived: Int64(body.count), entityTag: head.headerFields[.eTag],
                                    lastModified: head.headerFields[.lastModified], expectedLength: Int64(body.count))
            let error: LoadError?
            if callback {
                error = await withCheckedContinuation { done in
                    cancelling.downloadTask(withResumeData: resume) { _, _, error in done.resume(returning: error) }.resume()
                }
            } else {
                error = await loadError { _ = try await session.download(resumeFrom: resume, delegate: CancelAtResponse()) }
            }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(error?.resumeData?.partialFile == file)
            #expect(try Data(contentsOf: file) == body, "the partial file, whole, was deleted (completion handler: \(callback))")
        }
    }

    @Test("A download task cancelled as its last bytes are written keeps them to resume from, as the async call does")
    func callbackCancelledAtLastWrite() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let cancelling = LoaderSession(configuration: session.configuration, delegate: CancelAtLastWrite())
        let url = try Nginx.http("/1k.bin")
        let expected = try Data(contentsOf: URL(fileURLWithPath: try Nginx.require().root + "/1k.bin"))
        let error: LoadError? = await withCheckedContinuation { done in
            cancelling.downloadTask(with: url) { _, _, error in done.resume(returning: error) }.resume()
        }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        let resume = try #require(error?.resumeData, "the whole file was deleted without resume data")
        #expect(resume.bytesReceived == Int64(expected.count))
        #expect(try Data(contentsOf: resume.partialFile) == expected)
        // Resuming finds nothing left to fetch: the file is handed over whole.
        let (file, _) = try await session.download(resumeFrom: resume)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try Data(contentsOf: file) == expected)
    }

    @Test("Cut again while resuming: new resume data after the bytes kept, and a third attempt completes the file")
    func cutTwice() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let first = await loadError { _ = try await session.download(from: ScriptedServer.shared.url("/resumable-twice")) }
        let second = await loadError { _ = try await session.download(resumeFrom: try #require(first?.resumeData)) }
        #expect(second?.code == .networkConnectionLost)
        let resume = try #require(second?.resumeData)
        #expect(resume.bytesReceived == 700)
        #expect(resume.expectedLength == 1000)
        let (file, _) = try await session.download(resumeFrom: resume)
        #expect(try Data(contentsOf: file) == Self.original)
    }

    @Test("A 206 that is not the whole rest (capped) fails and leaves the resume data as it was")
    func capped() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let first = await loadError { _ = try await session.download(from: ScriptedServer.shared.url("/resumable-capped")) }
        let resume = try #require(first?.resumeData)
        let error = await loadError { _ = try await session.download(resumeFrom: resume) }
        #expect(error?.code == .badServerResponse, "\(String(describing: error))")
        #expect(error?.resumeData == resume)
        #expect(try Data(contentsOf: resume.partialFile) == Self.original.prefix(400))
    }

    @Test("No resume data for a slice the caller asked for, nor for a coded body, decoded or not")
    func notFromSlicesOrCodings() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        var slice = LoadRequest(url: ScriptedServer.shared.url("/resumable-twice"))
        slice.headerFields[.range] = "bytes=100-"
        let sliced = await loadError { _ = try await session.download(for: slice) }
        #expect(sliced != nil && sliced?.resumeData == nil, "\(String(describing: sliced))")
        let decoded = await loadError { _ = try await session.download(from: ScriptedServer.shared.url("/resumable-gzip")) }
        #expect(decoded != nil && decoded?.resumeData == nil, "\(String(describing: decoded))")
        var coded = LoadRequest(url: ScriptedServer.shared.url("/resumable-gzip"))
        coded.headerFields[.acceptEncoding] = "gzip"
        let raw = await loadError { _ = try await session.download(for: coded) }
        #expect(raw != nil && raw?.resumeData == nil, "\(String(describing: raw))")
        #expect(filesLeft(in: folder).isEmpty)
    }

    @Test("A body without byte ranges or validators leaves no resume data and no file")
    func notResumable() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let error = await loadError { _ = try await session.download(from: ScriptedServer.shared.url("/truncated")) }
        #expect(error?.code == .networkConnectionLost)
        #expect(error?.resumeData == nil)
        #expect(filesLeft(in: folder).isEmpty)
    }

    @Test("Resume data is checked: a file outside the temporary folder or one that is gone fails; a failed connect keeps it")
    func checked() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try session(folder)
        let url = ScriptedServer.shared.url("/resumable")
        let outside = ResumeData(url: url, partialFile: URL(fileURLWithPath: "/etc/hostname"), bytesReceived: 1, entityTag: "\"v1\"",
                                 lastModified: nil, expectedLength: nil)
        let refused = await loadError { _ = try await session.download(resumeFrom: outside) }
        #expect(refused?.code == .cannotWriteToFile, "\(String(describing: refused))")
        let gone = ResumeData(url: url, partialFile: folder.appendingPathComponent("loader-gone.tmp"), bytesReceived: 1,
                              entityTag: "\"v1\"", lastModified: nil, expectedLength: nil)
        #expect(await loadError { _ = try await session.download(resumeFrom: gone) }?.code == .fileDoesNotExist)
        let error = await loadError { _ = try await session.download(from: url) }
        var resume = try #require(error?.resumeData)
        resume.url = URL(string: "http://127.0.0.1:\(LoopbackPorts.closed())/resumable")!
        let unreachable = await loadError { _ = try await session.download(resumeFrom: resume) }
        #expect(unreachable?.code == .cannotConnectToHost, "\(String(describing: unreachable))")
        #expect(unreachable?.resumeData == resume, "the partial file is untouched: the same resume data serves again")
        #expect(try Data(contentsOf: resume.partialFile).count == 400)
    }
}
