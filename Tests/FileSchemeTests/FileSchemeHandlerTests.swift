@testable import FileScheme
import Foundation
import HTTPTypes
import Loader
import TestSupport
import Testing

/// A fresh folder per test, removed at the end.
final class Scratch {
    let directory: URL
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("file-scheme-\(UUID())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: directory) }

    @discardableResult
    func file(_ name: String, _ contents: Data) throws -> URL {
        let url = directory.appendingPathComponent(name)
        try contents.write(to: url)
        return url
    }
    /// A file whose name is `name`'s bytes as they are (no `String` holds a name that is not UTF-8), holding `contents`.
    func file(bytes name: [UInt8], _ contents: String) throws {
        let fd = (Array(directory.path.utf8) + [UInt8(ascii: "/")] + name + [0]).withUnsafeBufferPointer { path in
            path.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY | O_TRUNC, 0o644) }
        }
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        guard write(fd, contents, contents.utf8.count) == contents.utf8.count else { throw POSIXError(.EIO) }
    }
}

private let session: LoaderSession = {
    var configuration = LoaderSession.Configuration.ephemeral
    configuration.handlerClasses = [FileSchemeHandler.self]
    return LoaderSession(configuration: configuration)
}()


@Suite("file: handler")
struct FileSchemeHandlerTests {
    @Test("A small file loads with its bytes, type, length and modification date")
    func smallFile() async throws {
        let scratch = try Scratch()
        let url = try scratch.file("page.html", Data("<p>hi</p>".utf8))
        let (data, response) = try await session.data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "<p>hi</p>")
        #expect(response.mimeType == "text/html")
        #expect(response.expectedContentLength == 9)
        #expect(response.headerFields[.lastModified]?.hasSuffix(" GMT") == true)
        #expect(response.headerFields[.acceptRanges] == "bytes")
    }

    @Test("A local file loads under returnCacheDataDontLoad: there is no origin for a cache to spare")
    func cacheOnlyPolicy() async throws {
        let scratch = try Scratch()
        let url = try scratch.file("offline.txt", Data("local".utf8))
        let (data, _) = try await session.data(for: LoadRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
        #expect(String(decoding: data, as: UTF8.self) == "local")
    }

    @Test("Percent-encoded paths with spaces and non-ASCII names open the right file")
    func encodedPaths() async throws {
        let scratch = try Scratch()
        try scratch.file("a b ü.txt", Data("unicode".utf8))
        let url = URL(string: scratch.directory.absoluteString + "a%20b%20%C3%BC.txt")!
        let (data, response) = try await session.data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "unicode")
        #expect(response.mimeType == "text/plain")
    }

    @Test("A missing file fails with fileDoesNotExist naming the URL and the path")
    func missing() async throws {
        let scratch = try Scratch()
        let url = scratch.directory.appendingPathComponent("nope.txt")
        let error = await loadError { _ = try await session.data(from: url) }
        #expect(error?.code == .fileDoesNotExist)
        #expect(error?.url == url)
        #expect(error?.description.contains(url.path) == true)
    }

    @Test("An unreadable file fails with noPermissionsToReadFile (as a non-root user)")
    func unreadable() async throws {
        let scratch = try Scratch()
        let url = try scratch.file("secret.txt", Data("x".utf8))
        chmod(url.path, 0)
        if getuid() == 0 {
            // root reads anything: check the errno mapping the handler uses instead.
            #expect(FileErrors.reading(EACCES, path: url.path, url: url).code == .noPermissionsToReadFile)
            #expect(FileErrors.reading(EPERM, path: url.path, url: url).code == .noPermissionsToReadFile)
        } else {
            let error = await loadError { _ = try await session.data(from: url) }
            #expect(error?.code == .noPermissionsToReadFile)
        }
    }

    @Test("A directory answers a sorted listing, folders marked with a slash")
    func directoryListing() async throws {
        let scratch = try Scratch()
        try scratch.file("b.txt", Data())
        try scratch.file("a.json", Data())
        try FileManager.default.createDirectory(at: scratch.directory.appendingPathComponent("sub"), withIntermediateDirectories: false)
        let (data, response) = try await session.data(from: scratch.directory)
        #expect(String(decoding: data, as: UTF8.self) == "a.json\nb.txt\nsub/\n")
        #expect(response.mimeType == "text/plain")
        #expect(response.expectedContentLength == Int64(data.count))
    }

    @Test("A listing gives each name's bytes as the folder holds them (one not in UTF-8 too), a link to a folder marked as one")
    func listingOfRawNames() async throws {
        let scratch = try Scratch()
        try scratch.file("plain", Data())
        // "café" in Latin-1: a name no String holds as it is.
        let latin1: [UInt8] = Array("caf".utf8) + [0xE9]
        let folder = scratch.directory.path
        try scratch.file(bytes: latin1, "")
        try FileManager.default.createDirectory(at: scratch.directory.appendingPathComponent("sub"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: folder + "/to-sub", withDestinationPath: folder + "/sub")
        let (data, _) = try await session.data(from: scratch.directory)
        // In byte order: 'c' (0x63) before 'p', 's', 't'.
        #expect(Array(data) == latin1 + Array("\nplain\nsub/\nto-sub/\n".utf8), "\(String(decoding: data, as: UTF8.self))")
    }

    @Test("Range headers select slices: a-b, a-, -n; a range past the end fails")
    func ranges() async throws {
        let scratch = try Scratch()
        let url = try scratch.file("digits.txt", Data("0123456789".utf8))
        func load(_ range: String) async throws -> (String, LoadResponse) {
            var request = LoadRequest(url: url)
            request.headerFields[.range] = range
            let (data, response) = try await session.data(for: request)
            return (String(decoding: data, as: UTF8.self), response)
        }
        let (middle, response) = try await load("bytes=2-4")
        #expect(middle == "234")
        #expect(response.headerFields[.contentRange] == "bytes 2-4/10")
        #expect(response.expectedContentLength == 3)
        #expect(try await load("bytes=7-").0 == "789")
        #expect(try await load("bytes=-3").0 == "789")
        #expect(try await load("bytes=8-100").0 == "89")
        let error = await loadError { _ = try await load("bytes=10-") }
        #expect(error?.code == .resourceUnavailable)
    }

    @Test("HEAD answers the head without a body")
    func head() async throws {
        let scratch = try Scratch()
        let url = try scratch.file("x.bin", Data(count: 1000))
        let (data, response) = try await session.data(for: LoadRequest(url: url, method: .head))
        #expect(data.isEmpty)
        #expect(response.expectedContentLength == 1000)
        #expect(response.mimeType == "application/octet-stream")
    }

    @Test("PUT writes the file atomically and leaves no temporary file")
    func put() async throws {
        let scratch = try Scratch()
        let target = scratch.directory.appendingPathComponent("out.txt")
        _ = try await session.upload(for: LoadRequest(url: target, method: .put), from: Data("first".utf8))
        _ = try await session.upload(for: LoadRequest(url: target, method: .put), from: Data("second".utf8))
        #expect(try String(contentsOf: target, encoding: .utf8) == "second")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == ["out.txt"])
    }

    @Test("PUT into a missing folder fails with cannotCreateFile and leaves nothing")
    func putMissingFolder() async throws {
        let scratch = try Scratch()
        let target = scratch.directory.appendingPathComponent("no/such/out.txt")
        let error = await loadError { _ = try await session.upload(for: LoadRequest(url: target, method: .put), from: Data("x".utf8)) }
        #expect(error?.code == .cannotCreateFile)
        #expect(error?.url == target)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path).isEmpty)
    }

    @Test("PUT whose body fails midway keeps the old file intact and leaves no temporary file")
    func putFailingBody() async throws {
        let scratch = try Scratch()
        let target = try scratch.file("keep.txt", Data("original".utf8))
        struct Broken: Error {}
        var request = LoadRequest(url: target, method: .put)
        request.body = .stream(length: nil) {
            AsyncThrowingStream { continuation in
                continuation.yield(Data("partial".utf8))
                continuation.finish(throwing: Broken())
            }
        }
        let error = await loadError { _ = try await session.data(for: request) }
        #expect(error?.code == .requestBodyStreamExhausted, "\(String(describing: error))")
        #expect(error?.url == target)
        #expect(error?.underlying is Broken)
        #expect(try String(contentsOf: target, encoding: .utf8) == "original")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == ["keep.txt"])
    }

    @Test("PUT onto a directory fails with fileIsDirectory")
    func putOntoDirectory() async throws {
        let scratch = try Scratch()
        let error = await loadError { _ = try await session.upload(for: LoadRequest(url: scratch.directory, method: .put), from: Data()) }
        #expect(error?.code == .fileIsDirectory)
    }

    @Test("download(from:) copies a file byte for byte")
    func download() async throws {
        let scratch = try Scratch()
        let contents = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let url = try scratch.file("blob.bin", contents)
        let (file, _) = try await session.download(from: url)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(Bytes.difference(try Data(contentsOf: file), contents) == nil)
    }

    @Test("Another host in a file: URL is refused")
    func otherHost() async {
        let error = await loadError { _ = try await session.data(from: URL(string: "file://elsewhere/etc/hostname")!) }
        #expect(error?.code == .unsupportedURL)
    }
}

@Suite("file: handler: memory and descriptors", .serialized)
struct FileSchemeResourceTests {
    @Test("A 256 MiB file read slowly through bytes(from:) keeps memory bounded")
    func slowReadInBoundedMemory() async throws {
        let scratch = try Scratch()
        let url = scratch.directory.appendingPathComponent("big.bin")
        let size = 256 * 1024 * 1024
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(size))  // sparse: no disk needed
        try handle.seek(toOffset: UInt64(size - 4))
        try handle.write(contentsOf: Data("tail".utf8))
        try handle.close()

        let (growth, (count, last)) = try await ResourceProbes.measuringPeakGrowth {
            let (bytes, _) = try await session.bytes(from: url)
            var count = 0
            var last = Data()
            for try await chunk in bytes.chunks {
                count += chunk.count
                last = chunk
                // A slow reader: the handler must wait for it rather than fill memory.
                if count % (4 * 1024 * 1024) < chunk.count { try await Task.sleep(for: .milliseconds(1)) }
            }
            return (count, last)
        }
        #expect(count == size)
        #expect(last.suffix(4) == Data("tail".utf8))
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak memory grew by \(growth >> 20) MiB")
    }

    @Test("Cancelling mid-body ends with cancelled and closes the file")
    func cancelMidBody() async throws {
        let scratch = try Scratch()
        let url = try scratch.file("mid.bin", Data(count: 8 * 1024 * 1024))
        let (bytes, _) = try await session.bytes(from: url)
        var iterator = bytes.chunks.makeAsyncIterator()
        _ = try await iterator.next()
        #expect(ResourceProbes.openPaths().contains(url.path))
        bytes.task.cancel()
        let error = await loadError { while try await iterator.next() != nil {} }
        #expect(error?.code == .cancelled)
        var closed = false
        for _ in 0..<200 where !closed {
            closed = !ResourceProbes.openPaths().contains(url.path)
            if !closed { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(closed, "the file descriptor was not released")
    }
}

