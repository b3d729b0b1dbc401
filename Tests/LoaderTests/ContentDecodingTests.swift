import Foundation
import HTTPTypes
import Loader
import TestSupport
import Testing

/// What a `zipped:` URL serves: encoded bytes, the `Content-Encoding` to announce, and the chunk size.
private struct Payload: Sendable {
    var body: Data
    var contentEncoding: String
    var chunk = 64 * 1024
}

/// `zipped://<id>` serves a registered payload with `Content-Encoding`, as a compressing server would, and
/// records the request's `Accept-Encoding`.
final class ZippedHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["zipped"] }
    fileprivate static let payloads = Locked<[String: Payload]>([:])
    static let acceptEncoding = Locked<[String: String]>([:])

    fileprivate static func register(_ payload: Payload) -> URL {
        let id = "z" + UUID().uuidString.prefix(8).lowercased()
        payloads.withLock { $0[id] = payload }
        return URL(string: "zipped://\(id)/resource")!
    }

    override func load() async throws {
        let id = request.url.host ?? ""
        Self.acceptEncoding.withLock { $0[id] = request.headerFields[.acceptEncoding] ?? "(none)" }
        guard let payload = Self.payloads.withLock({ $0[id] }) else { throw LoadError(.fileDoesNotExist, url: request.url) }
        var response = LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: Int64(payload.body.count))
        response.headerFields[.contentEncoding] = payload.contentEncoding
        client.handler(self, didReceive: response)
        var offset = 0
        while offset < payload.body.count {
            let end = min(offset + payload.chunk, payload.body.count)
            try await client.handler(self, deliver: payload.body.subdata(in: offset..<end))
            offset = end
        }
    }
}

/// `held://<id>` sends the first piece of a brotli body, then waits (10 s at most) for the reader to open the gate
/// before it sends the rest: as a server streaming events holds back its next one.
final class HeldHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["held"] }
    struct Entry {
        var pieces: [Data]
        /// Set by the reader once it has every decoded byte of the first piece.
        var openedByReader = false
        /// Set by the handler when it sent the rest without the reader's word, having waited its longest.
        var gaveUpWaiting = false
    }
    static let entries = Locked<[String: Entry]>([:])

    static func register(_ pieces: [Data]) -> URL {
        let id = "h" + UUID().uuidString.prefix(8).lowercased()
        entries.withLock { $0[id] = Entry(pieces: pieces) }
        return URL(string: "held://\(id)/stream")!
    }

    override func load() async throws {
        let id = request.url.host ?? ""
        guard let pieces = Self.entries.withLock({ $0[id]?.pieces }) else { throw LoadError(.fileDoesNotExist, url: request.url) }
        var response = LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: -1)
        response.headerFields[.contentEncoding] = "br"
        client.handler(self, didReceive: response)
        try await client.handler(self, deliver: pieces[0])
        var opened = false
        for _ in 0..<1000 {
            opened = Self.entries.withLock { $0[id]?.openedByReader ?? true }
            if opened { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        if !opened { Self.entries.withLock { $0[id]?.gaveUpWaiting = true } }
        for piece in pieces.dropFirst() { try await client.handler(self, deliver: piece) }
    }
}

private func zippedSession(_ configure: (inout LoaderSession.Configuration) -> Void = { _ in }) -> LoaderSession {
    var configuration = LoaderSession.Configuration.ephemeral
    configuration.handlerClasses = [ZippedHandler.self]
    configure(&configuration)
    return LoaderSession(configuration: configuration)
}

/// Text that compresses as real pages do, with some variety so every deflate block type appears.
private let sampleText = Data((0..<20_000).map { "line \($0): the quick brown fox \($0 * 7919 % 1000)\n" }.joined().utf8)

@Suite("Content decoding: gzip and deflate bodies decoded on the way up, bombs and corruption refused")
struct ContentDecodingTests {
    /// Loads `body` served with `coding`: it must fail with cannotDecodeContentData naming the URL, its text saying `words`.
    private func expectUndecodable(_ body: Data, coding: String, saying words: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        let url = ZippedHandler.register(Payload(body: body, contentEncoding: coding))
        let error = await loadError { _ = try await zippedSession().data(from: url) }
        #expect(error?.code == .cannotDecodeContentData, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.url == url, sourceLocation: sourceLocation)
        #expect(error?.description.contains(words) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    /// Loads `body` served with `coding`, which expands past the ratio limit: it must fail with dataLengthExceedsMaximum.
    private func expectBombRefused(_ body: Data, coding: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        let url = ZippedHandler.register(Payload(body: body, contentEncoding: coding))
        let error = await loadError { _ = try await zippedSession().data(from: url) }
        #expect(error?.code == .dataLengthExceedsMaximum, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    @Test("gzip, zlib deflate and raw deflate decode to the original bytes, whatever the chunking",
          arguments: [(Compression.Format.gzip, "gzip"), (.zlib, "deflate"), (.raw, "deflate"), (.gzip, "x-gzip")])
    func decodes(format: Compression.Format, coding: String) async throws {
        let encoded = Compression.compress(sampleText, format)
        for chunk in [1, 7, 1000, 64 * 1024] {
            // One byte at a time over a whole body is slow in a debug build; a prefix is enough for it.
            let original = chunk == 1 ? sampleText.prefix(4000) : sampleText
            let body = chunk == 1 ? Compression.compress(original, format) : encoded
            let url = ZippedHandler.register(Payload(body: body, contentEncoding: coding, chunk: chunk))
            let (data, response) = try await zippedSession().data(from: url)
            #expect(Bytes.difference(data, original) == nil, "chunks of \(chunk)")
            #expect(response.headerFields[.contentEncoding] == nil)
            #expect(response.headerFields[.contentLength] == nil, "the length described the compressed bytes")
            #expect(ZippedHandler.acceptEncoding.withLock { $0[url.host!] } == "gzip, deflate, br, zstd")
        }
    }

    @Test("brotli (br) decodes to the original bytes, whatever the chunking; stacked under gzip too")
    func brotli() async throws {
        for chunk in [1, 7, 1000, 64 * 1024] {
            let original = chunk == 1 ? sampleText.prefix(4000) : sampleText
            let url = ZippedHandler.register(Payload(body: Compression.brotli(original), contentEncoding: "br", chunk: chunk))
            let (data, response) = try await zippedSession().data(from: url)
            #expect(Bytes.difference(data, original) == nil, "chunks of \(chunk)")
            #expect(response.headerFields[.contentEncoding] == nil)
        }
        let stacked = ZippedHandler.register(Payload(body: Compression.compress(Compression.brotli(sampleText), .gzip), contentEncoding: "br, gzip"))
        let (data, _) = try await zippedSession().data(from: stacked)
        #expect(Bytes.difference(data, sampleText) == nil)
    }

    @Test("A streamed brotli body gives every decoded byte of what came before the server pauses, not only its first 64 KiB")
    func brotliStreamed() async throws {
        let first = sampleText.prefix(300_000), rest = sampleText.dropFirst(300_000)
        let url = HeldHandler.register(Compression.brotliFlushed([Data(first), Data(rest)]))
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HeldHandler.self]
        let (bytes, _) = try await LoaderSession(configuration: configuration).bytes(from: url)
        var received = Data()
        for try await chunk in bytes.chunks {
            received.append(chunk)
            if received.count >= first.count { HeldHandler.entries.withLock { $0[url.host!]?.openedByReader = true } }
        }
        #expect(Bytes.difference(received, sampleText) == nil)
        // Had the decoder held bytes back, the first part would have come whole only after the handler stopped waiting.
        #expect(HeldHandler.entries.withLock { $0[url.host!]?.gaveUpWaiting } == false)
    }

    @Test("A brotli body corrupt or cut short is cannotDecodeContentData naming the URL; a bomb past the ratio is refused")
    func brotliFailures() async throws {
        // Its bodies are tens of MiB, made and dropped here: not beside a test that measures the process's peak memory.
        try await ExclusiveGate.memory.exclusive {
            var corrupt = Compression.brotli(sampleText)
            corrupt.replaceSubrange(20..<60, with: Data(repeating: 0xFF, count: 40))
            let cut = Compression.brotli(sampleText).dropLast(16)
            for (body, words) in [(corrupt, "corrupt"), (Data(cut), "ended before")] {
                await expectUndecodable(body, coding: "br", saying: words)
            }
            // 64 MiB of zeros compress to a few hundred bytes: far past 200 decoded bytes per byte received.
            await expectBombRefused(Compression.brotli(Data(count: 64 << 20), quality: 1), coding: "br")
        }
    }

    @Test("zstd decodes to the original bytes, whatever the chunking; a body of two frames gives both; stacked under gzip too")
    func zstd() async throws {
        for chunk in [1, 7, 1000, 64 * 1024] {
            let original = chunk == 1 ? sampleText.prefix(4000) : sampleText
            let url = ZippedHandler.register(Payload(body: Compression.zstd(original), contentEncoding: "zstd", chunk: chunk))
            let (data, response) = try await zippedSession().data(from: url)
            #expect(Bytes.difference(data, original) == nil, "chunks of \(chunk)")
            #expect(response.headerFields[.contentEncoding] == nil)
        }
        let first = sampleText.prefix(50_000), second = sampleText.dropFirst(50_000)
        let frames = ZippedHandler.register(Payload(body: Compression.zstd(Data(first)) + Compression.zstd(Data(second)), contentEncoding: "zstd", chunk: 333))
        let (both, _) = try await zippedSession().data(from: frames)
        #expect(Bytes.difference(both, sampleText) == nil)
        let stacked = ZippedHandler.register(Payload(body: Compression.compress(Compression.zstd(sampleText), .gzip), contentEncoding: "zstd, gzip"))
        let (data, _) = try await zippedSession().data(from: stacked)
        #expect(Bytes.difference(data, sampleText) == nil)
        // Bodies that end exactly where the decoder's 64 KiB pieces do, and a skippable frame (RFC 8878 §3.1.2) before one.
        let skippable = Data([0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3])
        for (body, original) in [(Compression.zstd(sampleText.prefix(65_536)), sampleText.prefix(65_536)),
                                 (Compression.zstd(sampleText.prefix(131_072)), sampleText.prefix(131_072)),
                                 (skippable + Compression.zstd(sampleText), sampleText)] {
            let url = ZippedHandler.register(Payload(body: body, contentEncoding: "zstd", chunk: 5_000))
            let (decoded, _) = try await zippedSession().data(from: url)
            #expect(Bytes.difference(decoded, original) == nil, "\(original.count) bytes")
        }
    }

    @Test("A zstd body corrupt, cut short, or asking for a window over 8 MiB (RFC 9659) is cannotDecodeContentData naming the URL; a bomb is refused")
    func zstdFailures() async throws {
        // Its bodies are tens of MiB, made and dropped here: not beside a test that measures the process's peak memory.
        try await ExclusiveGate.memory.exclusive {
            var corrupt = Compression.zstd(sampleText)
            corrupt.replaceSubrange(20..<60, with: Data(repeating: 0xFF, count: 40))
            let cut = Compression.zstd(sampleText).dropLast(16)
            // 9 MiB that do not compress to nothing, in a frame whose window is 16 MiB.
            let wide = Compression.zstd(Data((0..<(9 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }), level: 1, windowLog: 24)
            // A frame of the format before 1.0 (v0.7's magic number), whose decoder would not apply the window limit, and
            // half of a second frame's magic number.
            let legacy = Data([0x27, 0xB5, 0x2F, 0xFD]) + Data(repeating: 0x11, count: 32)
            let halfMagic = Compression.zstd(sampleText) + Data([0x28, 0xB5])
            for (body, words) in [(corrupt, "zstd"), (Data(cut), "ended before"), (wide, "window over 8 MiB"),
                                  (legacy, "not a Zstandard frame"), (halfMagic, "ended before")] {
                await expectUndecodable(body, coding: "zstd", saying: words)
            }
            await expectBombRefused(Compression.zstd(Data(count: 64 << 20), level: 1), coding: "zstd")
        }
    }

    @Test("Stacked codings are undone last first")
    func stacked() async throws {
        let twice = Compression.compress(Compression.compress(sampleText, .zlib), .gzip)
        let url = ZippedHandler.register(Payload(body: twice, contentEncoding: "deflate, gzip"))
        let (data, _) = try await zippedSession().data(from: url)
        #expect(Bytes.difference(data, sampleText) == nil)
    }

    @Test("A stack of codings is weighed against the bytes received: layers each under the ratio, together over it, fail")
    func stackedBomb() async throws {
        let zeros = Data(count: 16 << 20)
        let once = Compression.compress(zeros, .gzip, level: 9)
        let twice = Compression.compress(once, .gzip, level: 9)
        // Each layer alone stays under the limit below; the whole expands far past it.
        try #require(zeros.count / once.count < 2000 && once.count / twice.count < 2000)
        try #require(zeros.count / twice.count > 2000)
        let url = ZippedHandler.register(Payload(body: twice, contentEncoding: "gzip, gzip"))
        let session = zippedSession {
            $0.contentDecoding.maximumRatio = 2000
            $0.contentDecoding.ratioFloor = 0
        }
        let error = await loadError { _ = try await session.data(from: url) }
        #expect(error?.code == .dataLengthExceedsMaximum, "\(String(describing: error))")
        #expect(error?.url == url)
    }

    @Test("A body that starts with a long run of zeros decodes whole at the default limits, though its first bytes expand far")
    func compressibleStartIsNoBomb() async throws {
        // 1.5 MiB of zeros, then 1 MiB of varied bytes: over the whole, about 2 decoded bytes per compressed one, but
        // the first 2 KB received decode to the 1.5 MiB of zeros (a ratio near 750 at that point).
        let varied = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) })
        let body = Data(count: 3 << 19) + varied
        let compressed = Compression.compress(body, .gzip, level: 9)
        try #require(body.count / compressed.count < 200)
        let url = ZippedHandler.register(Payload(body: compressed, contentEncoding: "gzip", chunk: 2048))
        let (data, _) = try await zippedSession().data(from: url)
        #expect(data == body)
    }

    @Test("More than five stacked codings are not undone: the caller gets the bytes as sent, header and all")
    func stackTooDeep() async throws {
        var six = sampleText
        for _ in 0..<6 { six = Compression.compress(six, .gzip) }
        let coding = Array(repeating: "gzip", count: 6).joined(separator: ", ")
        let url = ZippedHandler.register(Payload(body: six, contentEncoding: coding))
        let (data, response) = try await zippedSession().data(from: url)
        #expect(Bytes.difference(data, six) == nil)
        #expect(response.headerFields[.contentEncoding] == coding)
        // Five are still undone.
        var five = sampleText
        for _ in 0..<5 { five = Compression.compress(five, .gzip) }
        let fiveURL = ZippedHandler.register(Payload(body: five, contentEncoding: Array(repeating: "gzip", count: 5).joined(separator: ", ")))
        let (decoded, _) = try await zippedSession().data(from: fiveURL)
        #expect(Bytes.difference(decoded, sampleText) == nil)
    }

    @Test("A request with its own Accept-Encoding, or for a range (a slice of a compressed body cannot be decoded), gets the bytes as sent, header and all",
          arguments: [("Accept-Encoding", "gzip"), ("Range", "bytes=0-")])
    func bytesAsSent(field: String, value: String) async throws {
        let encoded = Compression.compress(sampleText, .gzip)
        let url = ZippedHandler.register(Payload(body: encoded, contentEncoding: "gzip"))
        var request = LoadRequest(url: url)
        request.headerFields[HTTPField.Name(field)!] = value
        let (data, response) = try await zippedSession().data(for: request)
        #expect(Bytes.difference(data, encoded) == nil)
        #expect(response.headerFields[.contentEncoding] == "gzip")
        #expect(response.expectedContentLength == Int64(encoded.count))
        // Only the caller's own Accept-Encoding is sent: a request for a range asks for no coding, as OkHttp's.
        #expect(ZippedHandler.acceptEncoding.withLock { $0[url.host!] } == (field == "Range" ? "(none)" : value))
    }

    @Test("With decodesRequestedCodings a request's own Accept-Encoding is sent as it is and its answer decoded; a range still is not")
    func requestedCodingsDecoded() async throws {
        let encoded = Compression.compress(sampleText, .gzip)
        let url = ZippedHandler.register(Payload(body: encoded, contentEncoding: "gzip"))
        var request = LoadRequest(url: url)
        request.headerFields[.acceptEncoding] = "gzip"
        let session = zippedSession { $0.contentDecoding.decodesRequestedCodings = true }
        let (data, response) = try await session.data(for: request)
        #expect(Bytes.difference(data, sampleText) == nil)
        #expect(response.headerFields[.contentEncoding] == nil)
        #expect(ZippedHandler.acceptEncoding.withLock { $0[url.host!] } == "gzip")
        request.headerFields[.range] = "bytes=0-"
        let (slice, _) = try await session.data(for: request)
        #expect(Bytes.difference(slice, encoded) == nil)
    }

    @Test("A coding we cannot undo reaches the caller untouched")
    func unknownCoding() async throws {
        let url = ZippedHandler.register(Payload(body: Data("not really dcb".utf8), contentEncoding: "dcb"))
        let (data, response) = try await zippedSession().data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "not really dcb")
        #expect(response.headerFields[.contentEncoding] == "dcb")
    }

    @Test("With decoding off nothing is asked for and nothing decoded")
    func off() async throws {
        let encoded = Compression.compress(sampleText, .gzip)
        let url = ZippedHandler.register(Payload(body: encoded, contentEncoding: "gzip"))
        let (data, _) = try await zippedSession { $0.contentDecoding = .off }.data(from: url)
        #expect(Bytes.difference(data, encoded) == nil)
        #expect(ZippedHandler.acceptEncoding.withLock { $0[url.host!] } == "(none)")
    }

    @Test("A reader that catches a limit's error and reads on gets nothing more: the rest of the bomb is not decoded")
    func nothingAfterFailure() async throws {
        /// Reads the decoded body in a middleware, as an app's may: past the first error, one more read.
        struct ReadOn: LoadMiddleware {
            let after = Locked<(failures: Int, bytes: Int, ended: Bool)>((0, 0, false))
            func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
                let result = try await next(request)
                var iterator = result.body.makeAsyncIterator()
                for _ in 0..<10_000 {
                    do {
                        guard let piece = try await iterator.next() else { break }
                        if after.withLock({ $0.failures }) > 0 { after.withLock { $0.bytes += piece.count } }
                    } catch {
                        let failures = after.withLock { $0.failures += 1; return $0.failures }
                        if failures > 1 { break }
                    }
                }
                after.withLock { $0.ended = true }
                return LoadResult(response: result.response, body: .empty)
            }
        }
        let reader = ReadOn()
        let url = ZippedHandler.register(Payload(body: Compression.compress(Data(count: 8 << 20), .gzip), contentEncoding: "gzip"))
        _ = try await zippedSession {
            $0.middleware = [reader]
            $0.contentDecoding.maximumDecodedSize = 1 << 20
        }.data(from: url)
        let seen = reader.after.withLock { $0 }
        #expect(seen.ended && seen.failures == 1 && seen.bytes == 0, "\(seen)")
    }

    @Test("A HEAD's head keeps Content-Length and Content-Encoding: they tell of the representation, no body is decoded")
    func bodilessHeadKept() async throws {
        let url = ZippedHandler.register(Payload(body: Compression.compress(sampleText, .gzip), contentEncoding: "gzip"))
        var head = LoadRequest(url: url)
        head.method = .head
        let (_, response) = try await zippedSession().data(for: head)
        #expect(response.headerFields[.contentEncoding] == "gzip")
        #expect(response.expectedContentLength == Int64(Compression.compress(sampleText, .gzip).count))
        // A GET of it is decoded, its length gone with the coding.
        let (data, decoded) = try await zippedSession().data(from: url)
        #expect(data == sampleText && decoded.headerFields[.contentEncoding] == nil && decoded.expectedContentLength == nil)
    }

    @Test("An empty body announced as gzip or br (a HEAD, a 204) is empty, not an error", arguments: ["gzip", "br"])
    func emptyBody(coding: String) async throws {
        let url = ZippedHandler.register(Payload(body: Data(), contentEncoding: coding))
        let (data, _) = try await zippedSession().data(from: url)
        #expect(data.isEmpty)
    }

    @Test("Corrupt compressed data is cannotDecodeContentData naming the URL")
    func corrupt() async throws {
        var encoded = Compression.compress(sampleText, .gzip)
        encoded.replaceSubrange(100..<140, with: Data(repeating: 0xFF, count: 40))
        await expectUndecodable(encoded, coding: "gzip", saying: "corrupt")
    }

    @Test("A compressed stream cut short is an error, never a silently short body")
    func truncated() async throws {
        let encoded = Compression.compress(sampleText, .gzip)
        for cut in [8, encoded.count / 2] {
            await expectUndecodable(Data(encoded.prefix(encoded.count - cut)), coding: "gzip", saying: "ended before")
        }
    }

    @Test("A gzip body of several members (concatenated .gz files) decodes whole, whatever the chunking; bytes after the last are ignored")
    func gzipMembersInBoundedMemory() async throws {
        let parts = [sampleText.prefix(30_000), sampleText.dropFirst(30_000).prefix(1), sampleText.dropFirst(30_001)]
        let members = parts.reduce(Data()) { $0 + Compression.compress(Data($1), .gzip) }
        for chunk in [1, 2, 7, 1000, 64 * 1024] {
            // One byte at a time through a debug build is slow: three small members are enough for it.
            let (original, body) = chunk <= 2
                ? (sampleText.prefix(900), [0..<300, 300..<301, 301..<900].reduce(Data()) { $0 + Compression.compress(sampleText[$1], .gzip) })
                : (sampleText, members)
            let url = ZippedHandler.register(Payload(body: body, contentEncoding: "gzip", chunk: chunk))
            let (data, _) = try await zippedSession().data(from: url)
            #expect(Bytes.difference(data, original) == nil, "chunks of \(chunk)")
        }
        // Trailing bytes that are not a member (padding) are ignored, as before; a lone 0x1f too.
        for trailer in [Data(repeating: 0, count: 9), Data([0x1F])] {
            let url = ZippedHandler.register(Payload(body: members + trailer, contentEncoding: "gzip", chunk: 1000))
            let (data, _) = try await zippedSession().data(from: url)
            #expect(Bytes.difference(data, sampleText) == nil, "trailer \(Array(trailer))")
        }
        // Many megabytes of trailing bytes are dropped as they come, not gathered: memory stays bounded.
        let (growth, tail) = try await ResourceProbes.measuringPeakGrowth(prepare: {
            ZippedHandler.register(Payload(body: members + Data(repeating: 0, count: 96 << 20), contentEncoding: "gzip"))
        }, { url in try await zippedSession().data(from: url).0 })
        #expect(Bytes.difference(tail, sampleText) == nil)
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak RSS grew \(growth >> 20) MiB over trailing bytes")
        // A second member cut short is cut short.
        let second = Compression.compress(sampleText, .gzip)
        let cut = ZippedHandler.register(Payload(body: members + second.prefix(second.count / 2), contentEncoding: "gzip"))
        let error = await loadError { _ = try await zippedSession().data(from: cut) }
        #expect(error?.code == .cannotDecodeContentData, "\(String(describing: error))")
    }

    @Test("A decompression bomb stops at the ratio limit, in bounded memory")
    func bombInBoundedMemory() async throws {
        // 64 MiB of zeros compress to about 64 KB: a ratio near 1000. Made inside the memory gate, so that
        // the big input does not land in another test's measurement.
        let (growth, (url, error)) = try await ResourceProbes.measuringPeakGrowth(prepare: {
            let bomb = Compression.compress(Data(count: 64 << 20), .gzip, level: 9)
            return ZippedHandler.register(Payload(body: bomb, contentEncoding: "gzip"))
        }) { url in
            let error = await loadError {
                let (bytes, _) = try await zippedSession().bytes(from: url)
                for try await _ in bytes.chunks {}
            }
            return (url, error)
        }
        #expect(error?.code == .dataLengthExceedsMaximum)
        #expect(error?.url == url)
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak RSS grew \(growth >> 20) MiB")
    }

    @Test("With no limits a highly compressed body streams whole in bounded memory; a size limit still holds")
    func noRatioLimitInBoundedMemory() async throws {
        let zeros = 128 << 20
        let (growth, (url, count)) = try await ResourceProbes.measuringPeakGrowth(prepare: {
            ZippedHandler.register(Payload(body: Compression.compress(Data(count: zeros), .gzip, level: 9), contentEncoding: "gzip"))
        }) { url in
            let (bytes, _) = try await zippedSession { $0.contentDecoding.maximumRatio = nil }.bytes(from: url)
            var count = 0
            for try await chunk in bytes.chunks { count += chunk.count }
            return (url, count)
        }
        #expect(count == zeros)
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak RSS grew \(growth >> 20) MiB")

        let limited = await loadError {
            _ = try await zippedSession {
                $0.contentDecoding.maximumRatio = nil
                $0.contentDecoding.maximumDecodedSize = 1 << 20
            }.data(from: url)
        }
        #expect(limited?.code == .dataLengthExceedsMaximum)
        #expect(limited?.description.contains("1048576") == true)
    }
}
