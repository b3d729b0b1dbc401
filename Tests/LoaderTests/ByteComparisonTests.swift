import Foundation
import TestSupport
import Testing

/// The tests' body comparison must see every difference, or the body tests that use it prove nothing.
@Suite("Test support: comparing bodies")
struct ByteComparisonTests {
    @Test("Equal bodies compare equal; a changed byte, a missing tail and an extra byte are each reported")
    func differences() {
        let body = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        #expect(Bytes.difference(body, body) == nil)
        #expect(Bytes.difference(Data(), Data()) == nil)
        var changed = body
        changed[77_777] &+= 1
        #expect(Bytes.difference(changed, body) == "100000 bytes, 100000 expected; they first differ at offset 77777")
        #expect(Bytes.difference(body.prefix(99_999), body) == "99999 bytes, 100000 expected; they first differ at offset 99999")
        #expect(Bytes.difference(body + Data([0]), body) == "100001 bytes, 100000 expected; they first differ at offset 100000")
    }
}
