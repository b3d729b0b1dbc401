import Foundation
import HTTPTypes
@testable import Loader
import Testing

/// What a download that stopped part way keeps to go on from, worked out from its response alone.
@Suite("Resume data from a response")
struct ResumeDataTests {
    private let url = URL(string: "http://127.0.0.1:1/file.bin")!

    private func response(_ status: HTTPResponse.Status, _ fields: HTTPFields) -> LoadResponse {
        LoadResponse(url: url, status: status, headerFields: fields)
    }

    @Test("A resumed 206's total comes from its Content-Range; without one, from its length and the offset; a length that would overflow the sum gives no total instead of a crash")
    func totals() throws {
        let request = LoadRequest(url: url)
        let file = URL(fileURLWithPath: "/tmp/part")
        func after(_ fields: HTTPFields) -> ResumeData? {
            ResumeData.after(response(.partialContent, fields), of: request, original: request, file: file, written: 10, offset: 400)
        }
        let ranged = try #require(after([.eTag: "\"v1\"", .contentLength: "600", .contentRange: "bytes 400-999/1000"]))
        #expect(ranged.expectedLength == 1000 && ranged.bytesReceived == 410)
        #expect(try #require(after([.eTag: "\"v1\"", .contentLength: "600"])).expectedLength == 1000)
        // A server's Content-Length near Int64.max: the sum trapped.
        #expect(try #require(after([.eTag: "\"v1\"", .contentLength: "9223372036854775807"])).expectedLength == nil)
        #expect(try #require(after([.eTag: "\"v1\"", .contentLength: "9223372036854775807", .contentRange: "bytes 400-999/1000"])).expectedLength == 1000)
    }
}
