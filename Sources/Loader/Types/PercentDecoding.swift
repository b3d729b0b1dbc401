/// The URL standard's percent-decode on bytes, shared by the handlers that decode URL parts themselves
/// (`data:` bodies, `file:` paths) rather than through `URL`, which cannot hand back bytes that are not UTF-8.
package enum PercentDecoding {
    /// `input` with each `%XX` turned into its byte; anything else, a malformed escape included, stays.
    package static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        decode(input, only: { _ in true })
    }

    /// `input` with each `%XX` whose byte passes `only` turned into that byte; other escapes stay as written.
    @inline(__always)
    package static func decode(_ input: UnsafeBufferPointer<UInt8>, only: (UInt8) -> Bool) -> [UInt8] {
        // Empty: `[]`, not an array made with no capacity, which writes the count of the standard library's shared
        // empty storage (a race to the thread sanitizer when two threads do it).
        guard let base = input.baseAddress, !input.isEmpty else { return [] }
        let count = input.count
        return [UInt8](unsafeUninitializedCapacity: count) { output, written in
            var index = 0, out = 0
            while index < count {
                let byte = base[index]
                if byte == 0x25, index + 2 < count, let high = hexValue(base[index + 1]), let low = hexValue(base[index + 2]),
                   only(high << 4 | low) {
                    output[out] = high << 4 | low
                    index += 3
                } else {
                    output[out] = byte
                    index += 1
                }
                out += 1
            }
            written = out
        }
    }

    /// The value of a hexadecimal digit, either case.
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
