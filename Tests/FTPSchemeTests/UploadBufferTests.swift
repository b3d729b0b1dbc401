import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
@testable import FTPScheme
import Loader
import Testing

/// The buffer between an upload's body and libcurl, driven alone: a body read from a named pipe, whose reader
/// (the buffer's pump) must let go of it once the transfer stops.
@Suite("FTP: the upload buffer, stopped while its body is being read")
struct UploadBufferTests {
    @Test("A chunk read after stop() is dropped and the pump ends, closing the body: the pipe's writer sees no reader left")
    func chunkAfterStop() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("upload-buffer-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("body").path
        #expect(mkfifo(fifo, 0o600) == 0)

        // Opened first, read and write, so that neither the pump's open nor the writer's waits for the other: a wait in
        // the pump's open() held one of the two cooperative threads, and a full run of the tests stalled behind it.
        let keeper = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        try #require(keeper >= 0)
        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(writer >= 0)
        defer { close(writer) }
        // Just under the limit, in the pipe before the pump opens it.
        #expect(write(writer, [UInt8](repeating: 1, count: 60 * 1024), 60 * 1024) == 60 * 1024)

        let buffer = UploadBuffer(body: .file(URL(fileURLWithPath: fifo)), limit: 64 * 1024)
        buffer.start(resume: {})
        await buffer.waitForStart()
        // The pump alone reads the pipe now; then the stop, while it waits in read() for more.
        close(keeper)
        try await Task.sleep(for: .milliseconds(100))
        buffer.stop()
        // The chunk that wakes the pump would take it over the limit: it used to wait there for room nobody makes.
        #expect(write(writer, [UInt8](repeating: 2, count: 8 * 1024), 8 * 1024) == 8 * 1024)

        // The read end closes once the pump has ended (poll says POLLERR to a writer of a pipe with no reader).
        var readerGone = false
        for _ in 0..<200 where !readerGone {
            var descriptor = pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)
            _ = poll(&descriptor, 1, 0)
            readerGone = descriptor.revents & Int16(POLLERR) != 0
            // poll() returns at once while the pipe has room: the wait is this sleep's.
            if !readerGone { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(readerGone, "the pump still holds the body's pipe two seconds after stop()")
    }
}

@Suite("FTP: the Content-Range of a ranged download")
struct ContentRangeTests {
    @Test("From the range's start and the length sent; a length a server claims past Int64's reach gives none instead of a crash")
    func ranges() {
        #expect(CurlTransfer.contentRange(from: 100, to: nil, length: 50) == "bytes 100-149/150")
        #expect(CurlTransfer.contentRange(from: 0, to: 9, length: 10) == "bytes 0-9/*")
        #expect(CurlTransfer.contentRange(from: 0, to: 99, length: 10) == "bytes 0-9/10")
        #expect(CurlTransfer.contentRange(from: 5, to: nil, length: 0) == nil)
        // libcurl takes the size from a 150 reply's "(N bytes)" when SIZE is refused: any N a server writes.
        #expect(CurlTransfer.contentRange(from: 2, to: nil, length: .max) == nil)
        #expect(CurlTransfer.contentRange(from: .max, to: nil, length: 1) == nil)
    }
}
