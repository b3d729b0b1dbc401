import FileScheme
import Foundation
import HTTPTypes
import Loader
import TestSupport
import Testing

@Suite("file: pseudo files, FIFOs, odd paths, and PUT that keeps what the target was")
struct FileSpecialFilesTests {
    @Test("A /proc file (size 0), a /sys file (size a page) and a cgroup file (size 0) load whole, with no Content-Length")
    func pseudoFiles() async throws {
        let (status, statusResponse) = try await fileSession().data(from: URL(fileURLWithPath: "/proc/self/status"))
        #expect(String(decoding: status, as: UTF8.self).contains("Pid:"), "a /proc file came back empty")
        #expect(statusResponse.headerFields[.contentLength] == nil)
        #expect(statusResponse.headerFields[.acceptRanges] == nil, "a range of a /proc file is not served")
        let mtu = try String(contentsOfFile: "/sys/class/net/lo/mtu", encoding: .utf8)
        let (data, _) = try await fileSession().data(from: URL(fileURLWithPath: "/sys/class/net/lo/mtu"))
        #expect(String(decoding: data, as: UTF8.self) == mtu)
        // A cgroup file (v1's or v2's file system, each its own) says 0 bytes and holds some.
        let cgroupFiles = ["/sys/fs/cgroup/cpu/cpu.shares", "/sys/fs/cgroup/unified/cgroup.procs", "/sys/fs/cgroup/cgroup.procs"]
            .filter { FileManager.default.isReadableFile(atPath: $0) }
        try #require(!cgroupFiles.isEmpty, "no cgroup file here to read")
        for path in cgroupFiles {
            let (held, response) = try await fileSession().data(from: URL(fileURLWithPath: path))
            #expect(!held.isEmpty && response.headerFields[.contentLength] == nil, "\(path): \(held.count) bytes, \(response.headerFields)")
        }
    }

    @Test("A file of a pseudo file system not known by name (binfmt_misc, mounted here) says 0 bytes and loads whole; an empty file is empty with Content-Length 0")
    func unknownPseudoFileSystem() async throws {
        let scratch = try Scratch()
        let mountPoint = scratch.directory.appendingPathComponent("binfmt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: false)
        try #require(mount("binfmt_misc", mountPoint.path, "binfmt_misc", 0, nil) == 0,
                     "mounting binfmt_misc needs root: \(String(cString: strerror(errno)))")
        // Detached, so that a file still open does not leave the mount behind.
        defer { umount2(mountPoint.path, Int32(MNT_DETACH)) }
        let status = mountPoint.appendingPathComponent("status")
        let held = try String(contentsOf: status, encoding: .utf8)
        try #require(!held.isEmpty && (try FileManager.default.attributesOfItem(atPath: status.path)[.size] as? Int) == 0)
        let (data, response) = try await fileSession().data(from: status)
        #expect(String(decoding: data, as: UTF8.self) == held)
        #expect(response.headerFields[.contentLength] == nil && response.headerFields[.acceptRanges] == nil)

        let empty = scratch.directory.appendingPathComponent("empty.txt")
        try Data().write(to: empty)
        let (nothing, emptyResponse) = try await fileSession().data(from: empty)
        #expect(nothing.isEmpty && emptyResponse.headerFields[.contentLength] == "0" && emptyResponse.headerFields[.acceptRanges] == "bytes")
    }

    @Test("A FIFO is read to its end once a writer comes; with none, the load ends at its timeout, not never")
    func fifo() async throws {
        let scratch = try Scratch()
        let fifo = scratch.directory.appendingPathComponent("pipe")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        // Nobody writes: the load waits in steps and the request timeout ends it.
        let error = await loadError { _ = try await fileSession(timeout: 0.5).data(from: fifo) }
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        // A writer comes 200 ms later, writes and closes.
        let writer = Task.detached {
            try await Task.sleep(for: .milliseconds(200))
            let handle = try FileHandle(forWritingTo: fifo)
            handle.write(Data("through the pipe".utf8))
            try handle.close()
        }
        let (data, _) = try await fileSession().data(from: fifo)
        try await writer.value
        #expect(String(decoding: data, as: UTF8.self) == "through the pipe")
    }

    @Test("A file whose modification time the date format cannot show loads whole without Last-Modified, not a crash")
    func extremeModificationTime() async throws {
        // tmpfs keeps whatever time a file's owner sets (ext4 stops at 2446); tar and rsync keep an archive's.
        let path = "/dev/shm/loader-mtime-\(UUID().uuidString)"
        try Data("kept".utf8).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        for seconds in [67_768_036_191_676_799, Int.min + 1, 253_402_300_800] {
            var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
            try #require(utimensat(AT_FDCWD, path, &times, 0) == 0, "utimensat(\(seconds)): errno \(errno)")
            let (data, response) = try await fileSession().data(from: URL(fileURLWithPath: path))
            #expect(String(decoding: data, as: UTF8.self) == "kept", "\(seconds)")
            #expect(response.headerFields[.lastModified] == nil, "\(seconds)")
        }
    }

    @Test("A path with %00 is badURL, never another file; escapes that are not UTF-8 name the file with those bytes, as curl reads them")
    func oddPaths() async throws {
        let scratch = try Scratch()
        try scratch.file("plain", Data("plain".utf8))
        let withNUL = URL(string: scratch.directory.absoluteString + "plain%00.txt")!
        let nulError = await loadError { _ = try await fileSession().data(from: withNUL) }
        #expect(nulError?.code == .badURL)
        #expect(nulError?.reason?.contains("NUL") == true)
        // "café" in Latin-1: the file is made with the byte 0xE9, as an old system names it.
        let name: [UInt8] = Array("caf".utf8) + [0xE9]
        try scratch.file(bytes: name, "latin")
        let latin1 = URL(string: scratch.directory.absoluteString + "caf%E9")!
        let (body, _) = try await fileSession().data(from: latin1)
        #expect(String(decoding: body, as: UTF8.self) == "latin")
        // Another byte is another file, which is not there: never the one whose name decodes alike.
        let other = URL(string: scratch.directory.absoluteString + "caf%E8")!
        let missing = await loadError { _ = try await fileSession().data(from: other) }
        #expect(missing?.code == .fileDoesNotExist && missing?.url == other, "\(String(describing: missing))")
        // An upload's path must be UTF-8.
        var put = LoadRequest(url: latin1, method: .put)
        put.body = .bytes(Data("new".utf8))
        let refused = await loadError { _ = try await fileSession().data(for: put) }
        #expect(refused?.code == .badURL && refused?.url == latin1, "\(String(describing: refused))")
    }

    @Test("PUT of a body shorter than it announced fails and leaves the old file as it was")
    func putShortBody() async throws {
        let scratch = try Scratch()
        let target = try scratch.file("keep.txt", Data("original".utf8))
        var request = LoadRequest(url: target, method: .put)
        request.body = .stream(length: 100) {
            AsyncThrowingStream { continuation in
                continuation.yield(Data(repeating: 0x61, count: 50))
                continuation.finish()
            }
        }
        let error = await loadError { _ = try await fileSession().data(for: request) }
        #expect(error?.code == .requestBodyStreamExhausted)
        #expect(error?.url == target)
        #expect(try String(contentsOf: target, encoding: .utf8) == "original")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == ["keep.txt"])
    }

    @Test("PUT keeps a file's permission bits and writes through a symbolic link, which stays a link")
    func putKeepsModeAndLink() async throws {
        let scratch = try Scratch()
        let secret = try scratch.file("secret", Data("old".utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        _ = try await fileSession().upload(for: LoadRequest(url: secret, method: .put), from: Data("new".utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: secret.path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the private file became \(String(mode ?? 0, radix: 8))")

        let link = scratch.directory.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: secret.path)
        _ = try await fileSession().upload(for: LoadRequest(url: link, method: .put), from: Data("through".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == secret.path)
        #expect(try String(contentsOf: secret, encoding: .utf8) == "through")
    }

    @Test("PUT to a named pipe writes into it, as curl does, and the pipe stays; with no reader it fails at once, naming why")
    func putIntoFIFO() async throws {
        let scratch = try Scratch()
        let fifo = scratch.directory.appendingPathComponent("pipe")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        let error = await loadError {
            _ = try await fileSession().upload(for: LoadRequest(url: fifo, method: .put), from: Data("nobody".utf8))
        }
        #expect(error?.code == .cannotWriteToFile, "\(String(describing: error))")
        #expect(error?.description.contains("no process reads") == true, "\(String(describing: error))")

        // A reader opened without waiting for a writer; the body fits the pipe's buffer, so no write waits.
        let reader = open(fifo.path, O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        _ = try await fileSession().upload(for: LoadRequest(url: fifo, method: .put), from: Data("into the pipe".utf8))
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(reader, &buffer, buffer.count)
        #expect(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self) == "into the pipe")
        var info = stat()
        #expect(lstat(fifo.path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the pipe was replaced")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == ["pipe"])
    }

    @Test("PUT through a link to nothing yet creates the file it names, and the link stays")
    func putThroughDanglingLink() async throws {
        let scratch = try Scratch()
        let link = scratch.directory.appendingPathComponent("dangling")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "made-by-put.txt")
        _ = try await fileSession().upload(for: LoadRequest(url: link, method: .put), from: Data("created".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "made-by-put.txt")
        #expect(try String(contentsOf: scratch.directory.appendingPathComponent("made-by-put.txt"), encoding: .utf8) == "created")
    }

    @Test("PUT from a /proc file (size 0, contents not) sends what reading it gives: no announced length to miss")
    func putFromPseudoFile() async throws {
        let scratch = try Scratch()
        let target = scratch.directory.appendingPathComponent("status.txt")
        #expect(RequestBody.file(URL(fileURLWithPath: "/proc/self/status")).knownLength == nil)
        _ = try await fileSession().upload(for: LoadRequest(url: target, method: .put), fromFile: URL(fileURLWithPath: "/proc/self/status"))
        #expect(try String(contentsOf: target, encoding: .utf8).contains("Pid:"))
    }
}
