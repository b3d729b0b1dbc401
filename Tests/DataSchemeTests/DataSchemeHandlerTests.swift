import DataScheme
import Foundation
import Loader
import TestSupport
import Testing

@Suite("data: handler through a session")
struct DataSchemeHandlerTests {
    private let session: LoaderSession = {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [DataSchemeHandler.self]
        return LoaderSession(configuration: configuration)
    }()

    @Test("A data: URL loads with its MIME type and length")
    func simple() async throws {
        let (data, response) = try await session.data(from: URL(string: "data:text/plain;charset=utf-8,Hello%2C%20World")!)
        #expect(String(decoding: data, as: UTF8.self) == "Hello, World")
        #expect(response.headerFields[.contentType] == "text/plain;charset=utf-8")
        #expect(response.mimeType == "text/plain")
        #expect(response.textEncodingName == "utf-8")
        #expect(response.expectedContentLength == 12)
        #expect(response.status == nil)
    }

    @Test("A data: URL loads under returnCacheDataDontLoad: it carries its bytes, with no origin to reach")
    func cacheOnlyPolicy() async throws {
        let url = URL(string: "data:,cached%20or%20not")!
        let (data, _) = try await session.data(for: LoadRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
        #expect(String(decoding: data, as: UTF8.self) == "cached or not")
    }

    @Test("Spaces and quotes before the comma read as written, though Foundation's URL escapes them")
    func foundationEscapesInTheType() async throws {
        let html = try #require(URL(string: "data:text/html; charset=utf-8,<b>hi</b>"))
        let (page, pageResponse) = try await session.data(from: html)
        #expect(String(decoding: page, as: UTF8.self) == "<b>hi</b>")
        #expect(pageResponse.mimeType == "text/html")
        #expect(pageResponse.textEncodingName == "utf-8")
        // "; base64" with a space is base64 still (the Fetch standard's data: URL processor).
        let (image, imageResponse) = try await session.data(from: try #require(URL(string: "data:image/png; base64,AAEC/w==")))
        #expect(image == Data([0, 1, 2, 255]))
        #expect(imageResponse.mimeType == "image/png")
        let (quoted, quotedResponse) = try await session.data(from: try #require(URL(string: #"data:text/plain;charset="utf-8",x"#)))
        #expect(quoted == Data("x".utf8))
        #expect(quotedResponse.textEncodingName == "utf-8")
    }

    @Test("A base64 data: URL announces its decoded length")
    func base64Length() async throws {
        let (data, response) = try await session.data(from: URL(string: "data:;base64,SGVsbG8=")!)
        #expect(data == Data("Hello".utf8))
        #expect(response.expectedContentLength == 5)
        #expect(response.headerFields[.contentType] == "text/plain;charset=US-ASCII")
    }

    @Test("A base64 body up to 16 MiB arrives in one piece, its last partial group included")
    func wholeBody() async throws {
        // 1 MiB + 2 bytes: the last group of the encoding is partial (two bytes, one `=`).
        let raw = Data((0..<(1 << 20) + 2).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        let url = URL(string: "data:application/octet-stream;base64," + raw.base64EncodedString())!
        let (bytes, response) = try await session.bytes(from: url)
        var chunks: [Data] = []
        for try await chunk in bytes.chunks { chunks.append(chunk) }
        #expect(chunks.count == 1)
        #expect(Bytes.difference(chunks.first ?? Data(), raw) == nil)
        #expect(response.expectedContentLength == Int64(raw.count))
    }

    @Test("Invalid base64 fails with badURL naming the URL and the cause, before any response")
    func invalidBase64() async {
        let url = URL(string: "data:;base64,SGVsbG8===")!
        do {
            _ = try await session.data(from: url)
            Issue.record("expected a failure")
        } catch let error as LoadError {
            #expect(error.code == .badURL)
            #expect(error.url == url)
            #expect(error.description.contains("base64"))
        } catch {
            Issue.record("not a LoadError: \(error)")
        }
    }

    @Test("A 100 MB data: URL streams through bytes(for:) in bounded extra memory")
    func hundredMegabytesInBoundedMemory() async throws {
        let decodedSize = 100 * 1024 * 1024 / 3 * 3
        let session = self.session
        let (growth, (count, firstChunk, expected)) = try await ResourceProbes.measuringPeakGrowth(prepare: {
            // "ABC" repeated: 100 MiB decoded, 133 MiB of URL text.
            URL(string: "data:application/octet-stream;base64," + String(repeating: "QUJD", count: decodedSize / 3))!
        }) { url in
            let (bytes, response) = try await session.bytes(from: url)
            var count = 0
            var firstChunk: Data?
            for try await chunk in bytes.chunks {
                if firstChunk == nil { firstChunk = chunk }
                count += chunk.count
            }
            return (count, firstChunk, response.expectedContentLength)
        }
        #expect(expected == Int64(decodedSize))
        #expect(count == decodedSize)
        #expect(firstChunk?.prefix(6) == Data("ABCABC".utf8))
        // Decoding whole would take 100 MiB for the body alone; streaming needs a few chunks.
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak memory grew by \(growth >> 20) MiB while decoding")
    }
}

