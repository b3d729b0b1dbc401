import DataScheme
import Foundation
import Testing

/// Bodies long enough for the processor's block fast path (64 characters at a time), with the cases the
/// short WPT vectors cover placed deep inside them.
@Suite("data: URLs: long base64 bodies")
struct LongBase64Tests {
    private let payload = Data((0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })

    private func decode(_ body: String) -> Data? {
        guard let url = try? DataURL.parse("data:;base64," + body) else { return nil }
        var bytes = Data()
        var chunks = url.decodedChunks(maxChunkBytes: 4096)
        while let chunk = try? chunks.next() { bytes += chunk }
        #expect(bytes.count == url.expectedLength, "the announced length is the decoded one")
        return bytes
    }

    @Test("A long body decodes to its bytes, and announces their count")
    func plain() {
        #expect(decode(payload.base64EncodedString()) == payload)
    }

    @Test("Whitespace and percent-escapes deep inside a long body are handled as in a short one")
    func whitespaceAndEscapes() {
        var text = Array(payload.base64EncodedString())
        text.insert(contentsOf: " \n\t", at: 20_000)
        text.insert(contentsOf: "\r\n", at: 1_000)
        let escaped = String(text).replacingOccurrences(of: "A", with: "%41")
        #expect(decode(String(text)) == payload)
        #expect(decode(escaped) == payload)
    }

    @Test("An invalid character or misplaced padding deep inside a long body fails the URL")
    func invalidDeepInside() {
        let text = payload.base64EncodedString()
        for position in [70, 12_345, 39_990] {
            var broken = Array(text)
            broken[position] = "*"
            #expect(decode(String(broken)) == nil, "'*' at \(position)")
            var padded = Array(text)
            padded[position] = "="
            #expect(decode(String(padded)) == nil, "'=' at \(position)")
        }
    }

    @Test("Tabs, controls and non-ASCII deep inside a long URL are treated as a URL parser would")
    func serializationOfLongText() throws {
        let filler = String(repeating: "x", count: 100)
        for inserted in ["\t", "\u{7F}", "é", "\u{01}"] {
            let url = try DataURL.parse("data:," + filler + inserted + filler)
            var chunks = url.decodedChunks()
            var bytes: [UInt8] = []
            while let chunk = try chunks.next() { bytes += chunk }
            // A tab is dropped; anything else is percent-encoded and so decoded back to its own bytes.
            let expected = Array((filler + (inserted == "\t" ? "" : inserted) + filler).utf8)
            #expect(bytes == expected, "\(inserted.unicodeScalars.first!.value)")
        }
    }
}
