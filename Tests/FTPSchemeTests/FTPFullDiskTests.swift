import Foundation
import Loader
import TestSupport
import Testing

@Suite("ftp: downloads to a full disk")
struct FTPFullDiskTests {
    @Test("A download that fills the disk fails with cannotWriteToFile naming the URL and the cause, and leaves no file")
    func download() async throws {
        try await TestServers.withFullDisk { folder in
            let session = FTPServers.session { $0.temporaryDirectory = folder }
            let url = try FTPServers.url("/8m.bin")
            let error = await loadError { _ = try await session.download(from: url) }
            #expect(fullDiskFailureProblem(error, url: url) == nil)
            #expect(filesLeft(in: folder).isEmpty, "the partial download stayed: \(filesLeft(in: folder))")

            // The session goes on: the next download, to a disk with room, is whole.
            let (data, _) = try await session.data(from: FTPServers.url("/300k.bin"))
            #expect(data == (try FTPServers.file("/300k.bin")))
        }
    }
}
