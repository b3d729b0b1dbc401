import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

@Suite("http: downloads to a full disk")
struct HTTPFullDiskTests {
    @Test("A download that fills the disk fails with cannotWriteToFile naming the URL and the cause, leaves no file, and frees its connection")
    func download() async throws {
        try await TestServers.withFullDisk { folder in
            let session = try Nginx.session {
                $0.temporaryDirectory = folder
                // One connection: a failed download that kept it would hold up the load after it.
                $0.handlerOptions[HTTPClientOptions.self].maximumConnectionsPerHost = 1
                $0.timeoutIntervalForRequest = 20
            }
            let url = try Nginx.http("/1m.bin")
            let error = await loadError { _ = try await session.download(from: url) }
            #expect(fullDiskFailureProblem(error, url: url) == nil)
            #expect(filesLeft(in: folder).isEmpty, "the partial download stayed: \(filesLeft(in: folder))")

            let (data, response) = try await session.data(from: Nginx.http("/hello.txt"))
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        }
    }
}
