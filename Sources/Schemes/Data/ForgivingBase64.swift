/// The WHATWG "forgiving-base64 decode": ASCII whitespace is ignored, one or two `=` may pad the end,
/// and trailing bits are discarded.
///
/// ``Decoder`` decodes incrementally, chunk by chunk, in constant extra memory; ``decode(_:)`` is the
/// one-shot form.
public enum ForgivingBase64 {
    /// Decodes `input`; `nil` if it is not valid forgiving base64.
    public static func decode(_ input: some Collection<UInt8>) -> [UInt8]? {
        var decoder = Decoder()
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3 + 3)
        guard decoder.feed(input, into: &output), decoder.finish(into: &output) else { return nil }
        return output
    }

    /// 0–63 for the base64 alphabet, `whitespace` for ASCII whitespace, `pad` for `=`, `invalid` otherwise.
    static let table: [UInt8] = {
        var table = [UInt8](repeating: invalid, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        for byte in [0x09, 0x0A, 0x0C, 0x0D, 0x20] { table[byte] = whitespace }
        table[Int(UInt8(ascii: "="))] = pad
        return table
    }()
    static let invalid: UInt8 = 0xFF
    static let whitespace: UInt8 = 0xFE
    static let pad: UInt8 = 0xFD

    /// Decodes forgiving base64 fed in pieces of any size; padding and length are checked at ``finish(into:)``.
    public struct Decoder: Sendable {
        private var bits: UInt32 = 0
        private var sextets = 0        // significant characters so far (not whitespace or padding)
        private var padding = 0        // `=` seen so far; after one, only `=` and whitespace may follow
        private(set) var failed = false

        /// A decoder at the start of its input.
        public init() {}

        /// Decodes `chunk`, appending whole bytes to `output`. Returns `false` once the input is invalid.
        public mutating func feed(_ chunk: some Collection<UInt8>, into output: inout [UInt8]) -> Bool {
            if failed { return false }
            let done = chunk.withContiguousStorageIfAvailable { feed(buffer: $0, into: &output) }
            if let done { return done }
            return Array(chunk).withUnsafeBufferPointer { feed(buffer: $0, into: &output) }
        }

        private mutating func feed(buffer: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) -> Bool {
            // Plain locals in the loop: in unoptimized builds, touching `self` per byte costs an
            // exclusivity check each time.
            var bits = self.bits, sextets = self.sextets, padding = self.padding
            let capacity = (sextets % 4 + buffer.count) / 4 * 3
            var ok = true
            let decoded = [UInt8](unsafeUninitializedCapacity: capacity) { destination, written in
                var out = 0
                ForgivingBase64.table.withUnsafeBufferPointer { table in
                    var start = 0
                    // Fast path: whole groups of four alphabet characters, three bytes each, with no
                    // decision per character; anything else (whitespace, padding, an error) ends it.
                    if padding == 0, sextets & 3 == 0, let base = buffer.baseAddress {
                        while start + 4 <= buffer.count {
                            let a = table[Int(base[start])], b = table[Int(base[start + 1])]
                            let c = table[Int(base[start + 2])], d = table[Int(base[start + 3])]
                            guard (a | b | c | d) < 64 else { break }
                            let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                            destination[out] = UInt8(truncatingIfNeeded: group >> 16)
                            destination[out + 1] = UInt8(truncatingIfNeeded: group >> 8)
                            destination[out + 2] = UInt8(truncatingIfNeeded: group)
                            out += 3
                            sextets += 4
                            start += 4
                        }
                    }
                    for byte in UnsafeBufferPointer(rebasing: buffer[start...]) {
                        let value = table[Int(byte)]
                        if value < 64 {
                            if padding > 0 { ok = false; break }
                            bits = bits << 6 | UInt32(value)
                            sextets += 1
                            if sextets & 3 == 0 {
                                destination[out] = UInt8(truncatingIfNeeded: bits >> 16)
                                destination[out + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                                destination[out + 2] = UInt8(truncatingIfNeeded: bits)
                                out += 3
                                bits = 0
                            }
                        } else if value == ForgivingBase64.pad {
                            padding += 1
                        } else if value != ForgivingBase64.whitespace {
                            ok = false
                            break
                        }
                    }
                }
                written = out
            }
            self.bits = bits
            self.sextets = sextets
            self.padding = padding
            if output.isEmpty { output = decoded } else { output += decoded }
            if !ok { failed = true }
            return ok
        }

        /// Checks the padding and length rules and appends the last partial group. Returns `false` if the
        /// input as a whole is invalid.
        public mutating func finish(into output: inout [UInt8]) -> Bool {
            if failed { return false }
            if padding > 0 {
                // Padding is removed only when the padded length is a multiple of four, one or two `=`.
                guard padding <= 2, (sextets + padding) % 4 == 0 else { failed = true; return false }
            }
            switch sextets % 4 {
            case 1:
                failed = true
                return false
            case 2:
                output.append(UInt8(truncatingIfNeeded: bits >> 4))
            case 3:
                output.append(UInt8(truncatingIfNeeded: bits >> 10))
                output.append(UInt8(truncatingIfNeeded: bits >> 2))
            default:
                break
            }
            return true
        }
    }
}
