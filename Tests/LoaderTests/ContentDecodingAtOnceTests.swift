import Foundation
import HTTPTypes
@testable import Loader
import TestSupport
import Testing

/// The content decoding layer on a body that came whole (one chunk, as most small responses do): decoded at once and
/// handed on whole, so the caller takes it without reading a stream; what cannot be (too large, corrupt, cut short)
/// is decoded as it is read, with the same result as before.
@Suite("Content decoding: a body that came whole is decoded at once")
struct ContentDecodingAtOnceTests {
    private let text = Data((0..<200).map { "line \($0): the quick brown fox\n" }.joined().utf8)

    private func decoded(_ body: Data, coding: String, settings: ContentDecoding = .automatic) -> LoadResult {
        var response = LoadResponse(url: URL(string: "https://example.com/page")!, mimeType: "text/plain", expectedContentLength: Int64(body.count))
        response.headerFields[.contentEncoding] = coding
        response.headerFields[.contentLength] = String(body.count)
        let layer = ContentDecodingMiddleware(settings: settings)
        return layer.transformed(LoadResult(response: response, body: ResponseBody(data: body)), sent: nil)
    }

    @Test("gzip, deflate, br, zstd and a stack of them: decoded whole, the coding's fields gone")
    func whole() throws {
        let cases: [(Data, String)] = [
            (Compression.compress(text, .gzip), "gzip"), (Compression.compress(text, .zlib), "deflate"),
            (Compression.brotli(text), "br"), (Compression.zstd(text), "zstd"),
            (Compression.compress(Compression.brotli(text), .gzip), "br, gzip"),
        ]
        for (body, coding) in cases {
            let result = decoded(body, coding: coding)
            #expect(result.body.whole == text, "\(coding)")
            #expect(result.response.headerFields[.contentEncoding] == nil && result.response.headerFields[.contentLength] == nil)
        }
    }

    @Test("Corrupt, cut short, or past the limits: not whole; read, it fails or gives every byte as before")
    func notAtOnce() async throws {
        var corrupt = Compression.compress(text, .gzip)
        corrupt.replaceSubrange(20..<40, with: Data(repeating: 0xFF, count: 20))
        let cut = Compression.compress(text, .gzip).dropLast(8)
        for body in [corrupt, Data(cut)] {
            let result = decoded(body, coding: "gzip")
            #expect(result.body.whole == nil)
            await #expect(throws: LoadError.self) { _ = try await result.body.collect() }
        }
        // 1 MiB of zeros in about a kilobyte: past what is decoded at once, it streams, and arrives whole.
        let zeros = Data(count: 1 << 20)
        let large = decoded(Compression.compress(zeros, .gzip), coding: "gzip")
        #expect(large.body.whole == nil)
        #expect(try await large.body.collect() == zeros)
        // A session's size limit holds alike.
        var limited = ContentDecoding.automatic
        limited.maximumDecodedSize = 100
        let refused = decoded(Compression.compress(text, .gzip), coding: "gzip", settings: limited)
        #expect(refused.body.whole == nil)
        let error = await loadError { _ = try await refused.body.collect() }
        #expect(error?.code == .dataLengthExceedsMaximum, "\(String(describing: error))")
    }
}
