import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader

/// Why a string is not a loadable `data:` URL.
public enum DataURLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The scheme is not `data`.
    case notADataURL
    /// The URL has an authority that is not valid (such as a non-numeric port).
    case invalidAuthority
    /// There is no `,` between the MIME type and the body.
    case missingComma
    /// The body is marked `;base64` but is not valid base64.
    case invalidBase64

    /// A sentence saying what is wrong.
    public var description: String {
        switch self {
        case .notADataURL: return "not a data: URL"
        case .invalidAuthority: return "the data: URL has an invalid authority"
        case .missingComma: return "the data: URL has no ',' before its body"
        case .invalidBase64: return "the data: URL's body is not valid base64"
        }
    }
}

/// A `data:` URL processed by the WHATWG Fetch "data: URL processor": its MIME type and its body,
/// decoded on demand in chunks so that a body of any size needs only a chunk of extra memory.
public struct DataURL: Sendable {
    /// The MIME type; `text/plain;charset=US-ASCII` when the URL names none or an invalid one.
    public let mimeType: MIMEType
    /// Whether the body is base64 (`;base64` ended the MIME type part).
    public let isBase64: Bool
    /// The URL text, serialized, without its fragment.
    private let serialized: String
    /// Where the encoded body lies in `serialized.utf8`.
    private let body: Range<String.Index>

    /// Processes `urlString`, the text of a `data:` URL (its fragment, if any, is ignored).
    ///
    /// Characters a URL parser would percent-encode (controls, non-ASCII) are encoded first, so the
    /// result is the same for a string and for its URL's serialization.
    public static func parse(_ urlString: String) throws(DataURLError) -> DataURL {
        try process(serialize(urlString), mayHaveFragment: true)
    }

    /// Processes `url`. Its text is already serialized (a URL parser encoded what needed encoding), so
    /// this skips the pass that ``parse(_:)-(String)`` makes over the whole text to check that.
    ///
    /// Foundation's parser escapes more than a WHATWG URL parser does: `URL(string: "data:text/html;
    /// charset=utf-8,…")` holds `;%20charset`, which would read as a parameter named `%20charset`, and
    /// `; base64` would go unseen. Before the first `,` those escapes are undone, so that the URL reads as its
    /// text does (after it, the body is percent-decoded anyway).
    public static func parse(_ url: URL) throws(DataURLError) -> DataURL {
        let text = url.absoluteString
        try checkSchemeAndAuthority(text.utf8.prefix(4096))
        return try process(text, mayHaveFragment: url.fragment != nil, undoingFoundationEscapes: true)
    }

    private static func process(_ serialized: String, mayHaveFragment: Bool, undoingFoundationEscapes: Bool = false) throws(DataURLError) -> DataURL {
        let utf8 = serialized.utf8
        let afterScheme = utf8.index(utf8.startIndex, offsetBy: 5)
        // The fragment is not part of the URL's serialization for this purpose.
        let end = mayHaveFragment ? Self.firstIndex(of: UInt8(ascii: "#"), in: utf8[afterScheme...]) ?? utf8.endIndex : utf8.endIndex
        // After "data:", the MIME type runs up to the first ",".
        guard let comma = Self.firstIndex(of: UInt8(ascii: ","), in: utf8[afterScheme..<end]) else { throw .missingComma }
        var mime = Array(utf8[afterScheme..<comma])
        if undoingFoundationEscapes, mime.contains(UInt8(ascii: "%")) {
            mime = mime.withUnsafeBufferPointer { PercentDecoding.decode($0, only: Self.foundationEscaped.contains) }
        }
        while let last = mime.last, Self.isASCIIWhitespace(last) { mime.removeLast() }
        mime.removeFirst(mime.prefix(while: Self.isASCIIWhitespace).count)

        let isBase64 = Self.stripBase64Marker(&mime)
        if mime.first == UInt8(ascii: ";") { mime.insert(contentsOf: Array("text/plain".utf8), at: 0) }
        let parsed = MIMEType(String(decoding: mime, as: UTF8.self)) ?? .textPlainUSASCII
        let body = utf8.index(after: comma)..<end
        // One pass over the body, before anything is sent (so a load never fails after its response):
        // it validates base64 and counts the decoded length.
        let scanned = Self.scan(serialized.utf8[body], base64: isBase64)
        if isBase64, !scanned.valid { throw .invalidBase64 }
        return DataURL(mimeType: parsed, isBase64: isBase64, serialized: serialized, body: body, expectedLength: scanned.length, hasEscapes: scanned.escapes)
    }

    /// The decoded body's size, counted when the URL was parsed, without decoding it into memory.
    public let expectedLength: Int
    /// Whether the body has any `%` (seen by the same pass).
    private let hasEscapes: Bool

    /// The characters Foundation's URL parser escapes and a WHATWG one keeps in a `data:` URL's path: space,
    /// `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|` and `}`.
    private static let foundationEscaped: Set<UInt8> = Set(" \"<>\\^`{|}".utf8)

    /// The first `byte` in `bytes`, found with `memchr` when the string's storage is contiguous.
    private static func firstIndex(of byte: UInt8, in bytes: Substring.UTF8View) -> String.Index? {
        let offset: Int?? = bytes.withContiguousStorageIfAvailable { buffer -> Int? in
            guard let base = buffer.baseAddress, let found = memchr(base, Int32(byte), buffer.count) else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        guard let offset else { return bytes.firstIndex(of: byte) }
        return offset.map { bytes.index(bytes.startIndex, offsetBy: $0) }
    }

    /// One pass over an encoded body: the decoded length, for base64 whether it is valid, and whether any
    /// `%` occurs (if not, the decoder reads the body as it is).
    private static func scan(_ body: Substring.UTF8View, base64: Bool) -> (length: Int, valid: Bool, escapes: Bool) {
        if let result = body.withContiguousStorageIfAvailable({ scan($0, base64: base64) }) { return result }
        return Array(body).withUnsafeBufferPointer { scan($0, base64: base64) }
    }

    private static func scan(_ buffer: UnsafeBufferPointer<UInt8>, base64: Bool) -> (length: Int, valid: Bool, escapes: Bool) {
        ForgivingBase64.pairNotAlphabet.withUnsafeBufferPointer { pairs in
            ForgivingBase64.table.withUnsafeBufferPointer { table in
                var length = 0, sextets = 0, padding = 0, valid = true, escapes = false
                var index = 0
                let count = buffer.count
                while index < count {
                    // Fast path: a block of 64 alphabet characters (no `%`, whitespace or padding) needs no
                    // decision per byte.
                    if base64, padding == 0, index + 64 <= count,
                       ForgivingBase64.isAlphabetBlock(UnsafeRawPointer(buffer.baseAddress! + index), pairs: pairs.baseAddress!) {
                        length += 64
                        sextets += 64
                        index += 64
                        continue
                    }
                    var byte = buffer[index]
                    if byte == 0x25 { escapes = true }
                    if byte == 0x25, index + 2 < count, let high = PercentDecoding.hexValue(buffer[index + 1]), let low = PercentDecoding.hexValue(buffer[index + 2]) {
                        byte = high << 4 | low
                        index += 3
                    } else {
                        index += 1
                    }
                    length += 1
                    guard base64 else { continue }
                    let value = table[Int(byte)]
                    if value < 64 {
                        if padding > 0 { valid = false }
                        sextets += 1
                    } else if value == ForgivingBase64.pad {
                        padding += 1
                    } else if value != ForgivingBase64.whitespace {
                        valid = false
                    }
                }
                guard base64 else { return (length, true, escapes) }
                if padding > 0, padding > 2 || (sextets + padding) % 4 != 0 { valid = false }
                if sextets % 4 == 1 { valid = false }
                return (sextets / 4 * 3 + max(0, sextets % 4 - 1), valid, escapes)
            }
        }
    }

    /// The body, decoded in chunks of about `maxChunkBytes`.
    public func decodedChunks(maxChunkBytes: Int = 256 * 1024) -> Chunks {
        // At most the whole encoded body: index arithmetic with a larger step could overflow.
        let encoded = serialized.utf8.distance(from: body.lowerBound, to: body.upperBound)
        return Chunks(url: self, chunkBytes: max(4, min(maxChunkBytes, encoded)))
    }

    /// The whole body, decoded.
    public func decodedBytes() throws(DataURLError) -> [UInt8] {
        var chunks = decodedChunks(maxChunkBytes: 1 << 20)
        var bytes: [UInt8] = []
        while let chunk = try chunks.next() { bytes += chunk }
        return bytes
    }

    /// Decodes a body chunk by chunk: percent-decoding, then base64 decoding if the URL says so.
    public struct Chunks: Sendable {
        private let url: DataURL
        private let chunkBytes: Int
        private var position: String.Index
        private var base64 = ForgivingBase64.Decoder()
        private var finished = false

        init(url: DataURL, chunkBytes: Int) {
            self.url = url
            self.chunkBytes = chunkBytes
            self.position = url.body.lowerBound
        }

        /// The next decoded chunk, or `nil` at the end.
        public mutating func next() throws(DataURLError) -> [UInt8]? {
            try nextData().map { [UInt8]($0) }
        }

        /// The next decoded chunk, or `nil` at the end, decoded straight into the memory the `Data` keeps:
        /// a large body is written once, not copied from an array.
        public mutating func nextData() throws(DataURLError) -> Data? {
            guard !finished else { return nil }
            let utf8 = url.serialized.utf8
            let bodyEnd = url.body.upperBound
            guard position < bodyEnd else {
                // The last window checked the base64 rules (an empty body breaks none); one that failed
                // fails again rather than look like the end.
                finished = true
                if url.isBase64, base64.failed { throw .invalidBase64 }
                return nil
            }
            // A window of the encoded body that does not split a `%XX` escape.
            var end = utf8.index(position, offsetBy: chunkBytes, limitedBy: bodyEnd) ?? bodyEnd
            if end < bodyEnd {
                let last = utf8.index(before: end), beforeLast = utf8.index(before: last)
                if utf8[last] == UInt8(ascii: "%") {
                    end = last
                } else if utf8[beforeLast] == UInt8(ascii: "%") {
                    end = beforeLast
                }
            }
            let window = utf8[position..<end]
            position = end
            let last = end == bodyEnd
            // Without a `%` in the window (the usual base64 body) the bytes go to the decoder as they are.
            let isBase64 = url.isBase64, hasEscapes = url.hasEscapes
            var direct: Result<Data, DataURLError>?
            if isBase64 {
                _ = window.withContiguousStorageIfAvailable { buffer in
                    guard let base = buffer.baseAddress, !hasEscapes || memchr(base, 0x25, buffer.count) == nil else { return }
                    direct = decodeBase64(buffer, last: last)
                }
            }
            if let direct { return try direct.get() }
            let decoded = window.withContiguousStorageIfAvailable(PercentDecoding.decode)
                ?? Array(window).withUnsafeBufferPointer(PercentDecoding.decode)
            guard isBase64 else { return Data(decoded) }
            return try decoded.withUnsafeBufferPointer { decodeBase64($0, last: last) }.get()
        }

        /// `buffer` base64-decoded into new memory that the returned `Data` takes over, with the last partial
        /// group when it is the end of the body.
        private mutating func decodeBase64(_ buffer: UnsafeBufferPointer<UInt8>, last: Bool) -> Result<Data, DataURLError> {
            let memory = UnsafeMutablePointer<UInt8>.allocate(capacity: base64.capacity(for: buffer.count))
            var count = base64.decode(buffer, into: memory)
            if last, let decoded = count {
                count = base64.finish(into: memory + decoded).map { decoded + $0 }
            }
            guard let count else {
                memory.deallocate()
                return .failure(.invalidBase64)
            }
            guard count > 0 else {
                memory.deallocate()
                return .success(Data())
            }
            return .success(Data(bytesNoCopy: memory, count: count, deallocator: .custom { pointer, _ in
                pointer.assumingMemoryBound(to: UInt8.self).deallocate()
            }))
        }
    }

    // MARK: Parsing helpers

    private init(mimeType: MIMEType, isBase64: Bool, serialized: String, body: Range<String.Index>, expectedLength: Int, hasEscapes: Bool) {
        self.mimeType = mimeType
        self.isBase64 = isBase64
        self.serialized = serialized
        self.body = body
        self.expectedLength = expectedLength
        self.hasEscapes = hasEscapes
    }

    /// Whether every byte is printable ASCII (0x20–0x7E), checked eight bytes at a time: a byte below 0x20
    /// borrows in the subtraction, a byte of 0x7F or more sets its top bit in the sum.
    static func isPrintableASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            if (word &- ones &* 0x20) & ~word & highs != 0 || ((word &+ ones) | word) & highs != 0 { return false }
            index += 8
        }
        while index < bytes.count {
            if bytes[index] &- 0x20 >= 0x5F { return false }
            index += 1
        }
        return true
    }

    static func isASCIIWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D || byte == 0x20
    }

    /// Removes a final `;` + spaces + `base64` (any case) from `mime`; returns whether it was there.
    private static func stripBase64Marker(_ mime: inout [UInt8]) -> Bool {
        guard mime.count >= 6, String(decoding: mime.suffix(6), as: UTF8.self).lowercased() == "base64" else { return false }
        var rest = mime.dropLast(6)
        while rest.last == UInt8(ascii: " ") { rest = rest.dropLast() }
        guard rest.last == UInt8(ascii: ";") else { return false }
        mime = Array(rest.dropLast())
        return true
    }

    /// What a URL parser does to a `data:` URL's text before the processor sees it: drops the fragment,
    /// trims C0 controls and spaces at the ends, removes tabs and newlines, percent-encodes controls and
    /// non-ASCII, and checks the authority of a `data://` URL.
    static func serialize(_ text: String) throws(DataURLError) -> String {
        // The common case, text already serialized (a URL's absoluteString), is returned as is: a large
        // body is never copied.
        let clean = text.utf8.withContiguousStorageIfAvailable { buffer -> Bool in
            guard buffer.count >= 5, buffer[0] > 0x20, buffer[buffer.count - 1] > 0x20, let base = buffer.baseAddress else { return false }
            return Self.isPrintableASCII(UnsafeRawBufferPointer(start: base, count: buffer.count))
        } ?? false
        if clean {
            try checkSchemeAndAuthority(text.utf8.prefix(4096))
            return text
        }
        var bytes = Array(text.utf8)
        while let last = bytes.last, last <= 0x20 { bytes.removeLast() }
        bytes.removeFirst(bytes.prefix { $0 <= 0x20 }.count)
        bytes.removeAll { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        try checkSchemeAndAuthority(bytes)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(bytes.count + 16)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in bytes {
            if byte <= 0x1F || byte >= 0x7F {
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                encoded.append(byte)
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Checks that `prefix` (the start of the serialized text, at least its authority) begins with
    /// `data:` and that a `data://` authority has a numeric port, if any.
    static func checkSchemeAndAuthority(_ prefix: some Collection<UInt8>) throws(DataURLError) {
        guard prefix.count >= 5, String(decoding: prefix.prefix(5), as: UTF8.self).lowercased() == "data:" else { throw .notADataURL }
        guard prefix.dropFirst(5).starts(with: "//".utf8) else { return }
        let authority = prefix.dropFirst(7).prefix {
            $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#")
        }
        let hostPort = authority.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false).last ?? []
        if let colon = hostPort.lastIndex(of: UInt8(ascii: ":")), hostPort.last != UInt8(ascii: "]") {
            let port = hostPort[hostPort.index(after: colon)...]
            guard port.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { throw .invalidAuthority }
        }
    }
}
