import FileScheme
import Foundation
import Loader
import Synchronization
import TestSupport
import Testing

/// SIGPIPE signals this process received since ``FilePipeSignalProcessWide/readerGone()`` began counting.
private let pipeSignals = Atomic<Int>(0)

/// Between a test and the thread that drains its pipe.
private final class DrainFlags: Sendable {
    let finished = Atomic<Bool>(false)
    let drained = Atomic<Bool>(false)
}

@Suite("file: PUT into a named pipe whose reader stops or goes")
struct FilePipeUploadTests {
    /// A body several times a pipe's buffer (64 KiB on Linux).
    static let body = Data(repeating: UInt8(ascii: "p"), count: 1 << 20)

    /// A named pipe in a scratch folder (kept while the folder is), and a reader of it opened without waiting for a
    /// writer, which never reads unless the test does.
    static func pipeWithReader() throws -> (Scratch, URL, Int32) {
        let scratch = try Scratch()
        let fifo = scratch.directory.appendingPathComponent("pipe")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        let reader = open(fifo.path, O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        return (scratch, fifo, reader)
    }

    @Test("A reader that stops reading: the upload ends at the request timeout, while the pipe is still full, not when someone drains it")
    func readerStops() async throws {
        let (scratch, fifo, reader) = try FilePipeUploadTests.pipeWithReader()
        defer {
            close(reader)
            withExtendedLifetime(scratch) {}
        }
        // The bound: after 20 s the pipe is drained, which frees a write stuck in the kernel (the test then fails).
        let flags = DrainFlags()
        let drainer = Thread {
            for _ in 0..<2000 where !flags.finished.load(ordering: .acquiring) { usleep(10_000) }
            var buffer = [UInt8](repeating: 0, count: 65536)
            for _ in 0..<4000 where !flags.finished.load(ordering: .acquiring) {
                if read(reader, &buffer, buffer.count) > 0 { flags.drained.store(true, ordering: .releasing) }
                usleep(10_000)
            }
        }
        drainer.start()
        let error = await loadError {
            _ = try await fileSession(timeout: 0.5).upload(for: LoadRequest(url: fifo, method: .put), from: Self.body)
        }
        flags.finished.store(true, ordering: .releasing)
        let drained = flags.drained.load(ordering: .acquiring)
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(!drained, "the upload ended only once the pipe was drained: its write held a thread in the kernel")
    }
}

/// Alone in its pass (`scripts/test` runs the `…ProcessWide` tests one at a time): it counts the SIGPIPE signals of the
/// whole process, which a suite beside it could raise (a child process that exits before reading its input).
@Suite("file: PUT into a named pipe whose reader goes raises no SIGPIPE")
struct FilePipeSignalProcessWide {
    @Test("A reader that goes mid-body: the upload fails as a write error naming the pipe, and the process gets no SIGPIPE (which would end an app)")
    func readerGone() async throws {
        let (scratch, fifo, opened) = try FilePipeUploadTests.pipeWithReader()
        var reader = opened
        defer {
            if reader >= 0 { close(reader) }
            withExtendedLifetime(scratch) {}
        }
        // Counted, not ignored and never reset: other suites in this process set SIGPIPE ignored at any moment, and
        // putting back the default behind them could let one of their signals end the run.
        var counting = sigaction()
        counting.__sigaction_handler.sa_handler = { _ in pipeSignals.add(1, ordering: .relaxed) }
        sigemptyset(&counting.sa_mask)
        try #require(sigaction(SIGPIPE, &counting, nil) == 0)
        let before = pipeSignals.load(ordering: .relaxed)
        let upload = Task {
            await loadError {
                _ = try await fileSession().upload(for: LoadRequest(url: fifo, method: .put), from: FilePipeUploadTests.body)
            }
        }
        // Once the pipe is full (the first 64 KiB in), the reader takes some and goes.
        var buffer = [UInt8](repeating: 0, count: 4096)
        var taken = 0
        for _ in 0..<2000 where taken == 0 {
            try await Task.sleep(for: .milliseconds(10))
            taken = max(read(reader, &buffer, buffer.count), 0)
        }
        try await Task.sleep(for: .milliseconds(50))
        close(reader)
        reader = -1
        let error = await upload.value
        #expect(taken > 0)
        #expect(error?.code == .cannotWriteToFile, "\(String(describing: error))")
        #expect(error?.description.contains(fifo.path) == true, "\(String(describing: error))")
        #expect(pipeSignals.load(ordering: .relaxed) == before, "the write raised SIGPIPE")
    }
}
