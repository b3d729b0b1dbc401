import Foundation

/// Compares bodies in tests. A failed `#expect(received == expected)` on two large `Data` values makes the
/// test library describe how two big collections differ, which takes minutes; this says it in a line.
public enum Bytes {
    /// `nil` when `received` holds exactly the bytes of `expected`; otherwise both sizes and the first
    /// offset where they differ.
    public static func difference(_ received: Data, _ expected: Data) -> String? {
        if received == expected { return nil }
        let common = min(received.count, expected.count)
        let offset = received.withUnsafeBytes { (got: UnsafeRawBufferPointer) in
            expected.withUnsafeBytes { (want: UnsafeRawBufferPointer) in
                (0..<common).first { (index: Int) in got[index] != want[index] } ?? common
            }
        }
        return "\(received.count) bytes, \(expected.count) expected; they first differ at offset \(offset)"
    }
}
