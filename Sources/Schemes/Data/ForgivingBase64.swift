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
    /// Four tables of 256 entries: a character's value already shifted into its place in a group of four
    /// (18, 12, 6 or 0 bits), or `quadInvalid` for anything not in the alphabet, so that a group decodes
    /// with four loads and three ORs, and one comparison tells whether all four were alphabet.
    static let quadTable: [UInt32] = {
        var quad = [UInt32](repeating: quadInvalid, count: 1024)
        for byte in 0..<256 where table[byte] < 64 {
            for position in 0..<4 { quad[position * 256 + byte] = UInt32(table[byte]) << (18 - 6 * position) }
        }
        return quad
    }()
    static let quadInvalid: UInt32 = 0x0100_0000

    /// 0 where both bytes of a little-endian pair are alphabet characters, nonzero otherwise (64 KiB):
    /// validating a block takes one load per two characters.
    static let pairNotAlphabet: [UInt8] = {
        var pairs = [UInt8](repeating: 1, count: 65536)
        for first in 0..<256 where table[first] < 64 {
            for second in 0..<256 where table[second] < 64 { pairs[first | second << 8] = 0 }
        }
        return pairs
    }()

    /// Whether the 64 bytes at `block` are all alphabet characters (no whitespace, padding or other).
    @inline(__always)
    static func isAlphabetBlock(_ block: UnsafeRawPointer, pairs: UnsafePointer<UInt8>) -> Bool {
        var found: UInt8 = 0
        for offset in stride(from: 0, to: 64, by: 8) {
            let word = block.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            found |= pairs[Int(truncatingIfNeeded: word & 0xFFFF)] | pairs[Int(truncatingIfNeeded: (word >> 16) & 0xFFFF)]
                | pairs[Int(truncatingIfNeeded: (word >> 32) & 0xFFFF)] | pairs[Int(truncatingIfNeeded: word >> 48)]
        }
        return found == 0
    }

    /// Decodes eight alphabet characters at a time from `input` while there are eight more and all are
    /// alphabet, storing eight bytes for every six decoded (`output` needs two bytes of slack). Returns how
    /// many characters it read and how many bytes it decoded.
    static func decodeBlocks(_ input: UnsafePointer<UInt8>, count: Int, into output: UnsafeMutableRawPointer) -> (read: Int, written: Int) {
        quadTable.withUnsafeBufferPointer { quad in
            let q = quad.baseAddress!
            var read = 0, written = 0
            while read + 8 <= count {
                let w = input + read
                let high = q[Int(w[0])] | q[256 + Int(w[1])] | q[512 + Int(w[2])] | q[768 + Int(w[3])]
                let low = q[Int(w[4])] | q[256 + Int(w[5])] | q[512 + Int(w[6])] | q[768 + Int(w[7])]
                guard (high | low) < quadInvalid else { break }
                // 48 bits, first byte highest: big-endian, shifted to the top of the word.
                let bits = (UInt64(high) << 24 | UInt64(low)) << 16
                output.storeBytes(of: bits.bigEndian, toByteOffset: written, as: UInt64.self)
                written += 6
                read += 8
            }
            return (read, written)
        }
    }

    static let invalid: UInt8 = 0xFF
    static let whitespace: UInt8 = 0xFE
    static let pad: UInt8 = 0xFD

    /// Decodes forgiving base64 fed in pieces of any size; padding and length are checked at the end, by
    /// `finish`. After invalid input, nothing more is decoded.
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
            var ok = true
            let decoded = [UInt8](unsafeUninitializedCapacity: capacity(for: buffer.count)) { destination, written in
                guard let target = destination.baseAddress, let count = decode(buffer, into: target) else {
                    ok = false
                    written = 0
                    return
                }
                written = count
            }
            if output.isEmpty { output = decoded } else { output += decoded }
            return ok
        }

        /// How many bytes ``decode(_:into:)`` may store for `count` more characters, with the two bytes of
        /// slack its fast path needs and the two that the final `finish` may add. Ask before decoding: the
        /// answer depends on the characters decoded so far.
        func capacity(for count: Int) -> Int {
            (sextets % 4 + count) / 4 * 3 + 4
        }

        /// Decodes `buffer` into `destination`, which has room for ``capacity(for:)`` bytes: how many bytes it
        /// stored, or `nil` once the input is invalid.
        mutating func decode(_ buffer: UnsafeBufferPointer<UInt8>, into destination: UnsafeMutablePointer<UInt8>) -> Int? {
            if failed { return nil }
            // Plain locals in the loop: in unoptimized builds, touching `self` per byte costs an
            // exclusivity check each time.
            var bits = self.bits, sextets = self.sextets, padding = self.padding
            var ok = true
            var out = 0
            ForgivingBase64.table.withUnsafeBufferPointer { table in
                var start = 0
                // Fast path: eight alphabet characters at a time, six bytes stored at once, with no
                // decision per character; anything else (whitespace, padding, an error) ends it.
                if padding == 0, sextets & 3 == 0, let base = buffer.baseAddress {
                    (start, out) = ForgivingBase64.decodeBlocks(base, count: buffer.count, into: UnsafeMutableRawPointer(destination))
                    sextets += start
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
            self.bits = bits
            self.sextets = sextets
            self.padding = padding
            guard ok else {
                failed = true
                return nil
            }
            return out
        }

        /// Checks the padding and length rules and appends the last partial group. Returns `false` if the
        /// input as a whole is invalid.
        public mutating func finish(into output: inout [UInt8]) -> Bool {
            var tail: (UInt8, UInt8) = (0, 0)
            guard let count = withUnsafeMutableBytes(of: &tail, { finish(into: $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }) else {
                return false
            }
            if count > 0 { output.append(tail.0) }
            if count > 1 { output.append(tail.1) }
            return true
        }

        /// Checks the padding and length rules and stores the last partial group (up to two bytes) at
        /// `destination`: how many bytes it stored, or `nil` if the input as a whole is invalid.
        mutating func finish(into destination: UnsafeMutablePointer<UInt8>) -> Int? {
            if failed { return nil }
            if padding > 0 {
                // Padding is removed only when the padded length is a multiple of four, one or two `=`.
                guard padding <= 2, (sextets + padding) % 4 == 0 else { failed = true; return nil }
            }
            switch sextets % 4 {
            case 1:
                failed = true
                return nil
            case 2:
                destination[0] = UInt8(truncatingIfNeeded: bits >> 4)
                return 1
            case 3:
                destination[0] = UInt8(truncatingIfNeeded: bits >> 10)
                destination[1] = UInt8(truncatingIfNeeded: bits >> 2)
                return 2
            default:
                return 0
            }
        }
    }
}
