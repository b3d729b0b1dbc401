import DataScheme
import Foundation
import Loader
import TestSupport
import Testing

/// The corpora beside the project; a missing one fails the test.
private func corpus(_ path: String) throws -> [Any] {
    let url = Corpora.url(path)
    let data = try Data(contentsOf: url)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [Any], "cannot read \(url.path)")
}

@Suite("data: URLs: the WPT vectors")
struct DataURLCorpusTests {
    @Test("Every case of wpt-data-urls/data-urls.json gives the expected MIME type and bytes, or fails")
    func dataURLs() throws {
        var total = 0, passed = 0
        for case let entry as [Any] in try corpus("wpt-data-urls/data-urls.json") {
            total += 1
            let input = try #require(entry[0] as? String)
            let expectedMIME = entry[1] as? String
            let expectedBytes = (entry.count > 2 ? entry[2] as? [Int] : nil)?.map(UInt8.init)
            let outcome: (String, [UInt8])? = try? {
                let url = try DataURL.parse(input)
                let bytes = try url.decodedBytes()
                #expect(url.expectedLength == bytes.count, "announced length of \(input.debugDescription)")
                return (url.mimeType.description, bytes)
            }()
            let ok = expectedMIME == nil ? outcome == nil : (outcome?.0 == expectedMIME && outcome?.1 == expectedBytes)
            if ok {
                passed += 1
            } else {
                Issue.record("data: URL \(input.debugDescription): expected \(expectedMIME.debugDescription) \(expectedBytes.debugDescription), got \(outcome.map { "\($0.0) \($0.1)" } ?? "failure")")
            }
        }
        print("WPT data-urls: \(passed)/\(total) passed")
        #expect(total == 70)
        #expect(passed == total)
    }

    @Test("A Foundation URL of a WPT vector reads as the vector's text does, but where Foundation's URL holds other text")
    func urlAndTextAgree() throws {
        var compared = 0, rewritten: [String] = []
        for case let entry as [Any] in try corpus("wpt-data-urls/data-urls.json") {
            let input = try #require(entry[0] as? String)
            guard let url = URL(string: input) else { continue }
            // Two rewrites no reader of the URL can undo. A string in which Foundation had anything to escape
            // has its every `%` escaped too (`data: ,%FF` holds `%25FF`: a URL of the text "%FF"). And a `%20`
            // typed before the comma cannot be told from the space Foundation escapes so (the vector
            // `data:text/plain%20,X`), where the text's escapes count as written and the URL's as spaces.
            let mimePart = input.prefix { $0 != "," }
            if (url.absoluteString.contains("%25") && !input.contains("%25")) || mimePart.contains("%20") {
                rewritten.append(input)
                continue
            }
            compared += 1
            // The text as written, not Foundation's serialization: that one escapes spaces and quotes.
            let fromText = try? DataURL.parse(input)
            let fromURL = try? DataURL.parse(url)
            #expect(fromURL?.mimeType.description == fromText?.mimeType.description, "MIME type of \(input.debugDescription)")
            #expect((try? fromURL?.decodedBytes()) == (try? fromText?.decodedBytes()), "bytes of \(input.debugDescription)")
        }
        print("WPT data-urls through Foundation's URL: \(compared) read as their text, \(rewritten.count) rewritten by Foundation: \(rewritten.map(\.debugDescription).joined(separator: " "))")
        // 69 of the 70 vectors are URLs to Foundation; five hold other text than they were written with.
        #expect(compared == 64)
        #expect(rewritten.count == 5)
    }

    @Test("Every case of wpt-data-urls/base64.json decodes as specified, in one piece and fed in pieces of 1 to 7 bytes")
    func base64() throws {
        var total = 0, passed = 0
        for case let entry as [Any] in try corpus("wpt-data-urls/base64.json") {
            total += 1
            let input = Array(try #require(entry[0] as? String).utf8)
            let expected = (entry[1] as? [Int])?.map(UInt8.init)
            var ok = ForgivingBase64.decode(input) == expected
            for size in 1...7 {
                var decoder = ForgivingBase64.Decoder()
                var output: [UInt8] = []
                var valid = true
                var offset = 0
                while offset < input.count, valid {
                    valid = decoder.feed(input[offset..<min(input.count, offset + size)], into: &output)
                    offset += size
                }
                valid = valid && decoder.finish(into: &output)
                if (valid ? output : nil) != expected {
                    ok = false
                    Issue.record("base64 \(String(decoding: input, as: UTF8.self).debugDescription) fed in \(size)-byte pieces: expected \(expected.debugDescription), got \(valid ? output.description : "failure")")
                }
            }
            if ok { passed += 1 }
        }
        print("WPT base64: \(passed)/\(total) passed")
        #expect(total == 80)
        #expect(passed == total)
    }

    @Test("Chunked percent-decoding gives the same bytes for every chunk size")
    func chunkBoundaries() throws {
        // The base64 ones: escaped, and unescaped with the last group partial (one and two `=`, none).
        let inputs = ["data:,%41%42%4%43%%25zz%4", "data:,a%2", "data:;base64,%53%47%56sbG8%3D", "data:text/plain,%E2%80%A0x",
                      "data:;base64,SGVsbG8=", "data:;base64,SGVsbA==", "data:;base64,SGVsbG8", "data:;base64,SGVs bG8h"]
        for input in inputs {
            let url = try DataURL.parse(input)
            let whole = try url.decodedBytes()
            for size in 4...12 {
                var chunks = url.decodedChunks(maxChunkBytes: size)
                var joined: [UInt8] = []
                while let chunk = try chunks.next() { joined += chunk }
                #expect(joined == whole, "\(input) in chunks of \(size)")
            }
        }
        #expect(try DataURL.parse("data:,%41%42%4%43%%25zz%4").decodedBytes() == Array("AB%4C%%zz%4".utf8))
    }

    @Test("A 20 MB base64 data: URL decodes in chunks to exactly what Foundation decodes")
    func largeBase64() async throws {
        let outcome = try await ExclusiveGate.memory.exclusive { try await offCooperativePool(Self.decodeLargeBase64) }
        #expect(outcome.announced == outcome.payload.count)
        #expect(outcome.decoded == outcome.byFoundation)
        #expect(outcome.largestChunk <= 256 * 1024)
    }

    /// Encodes 15 MiB of random bytes, then decodes the data: URL in chunks: seconds of work in a debug build.
    private static func decodeLargeBase64() throws -> (payload: Data, announced: Int, decoded: Data, byFoundation: Data?, largestChunk: Int) {
        var generator = SystemRandomNumberGenerator()
        let payload = Data((0..<(15 * 1024 * 1024)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let encoded = payload.base64EncodedString()
        let url = try DataURL.parse("data:application/octet-stream;base64," + encoded)
        var chunks = url.decodedChunks()
        var decoded = Data()
        var largest = 0
        while let chunk = try chunks.next() {
            largest = max(largest, chunk.count)
            decoded.append(contentsOf: chunk)
        }
        return (payload, url.expectedLength, decoded, Data(base64Encoded: encoded), largest)
    }
}
