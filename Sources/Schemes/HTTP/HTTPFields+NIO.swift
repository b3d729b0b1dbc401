import HTTPTypes
import NIOHTTP1

extension HTTPFields {
    /// The fields of a NIO header block, in order; names that are not valid tokens are dropped.
    init(_ headers: HTTPHeaders) {
        self.init()
        // Room for all first: the fields' array would otherwise grow (and allocate) several times.
        reserveCapacity(headers.count)
        for (name, value) in headers {
            guard let fieldName = Self.commonName(name) ?? HTTPField.Name(name) else { continue }
            append(HTTPField(name: fieldName, value: value))
        }
    }

    /// The name, without checking and lowercasing it, when it is one most responses carry, spelled as
    /// servers usually spell it: that work showed in profiles of small responses. Picked by length and
    /// first byte, so that a name is compared with one candidate at most (a `switch` over the strings
    /// compared it with each in turn).
    private static func commonName(_ name: String) -> HTTPField.Name? {
        let utf8 = name.utf8
        let candidate: HTTPField.Name
        switch (utf8.count, utf8.first) {
        case (4, UInt8(ascii: "D")): candidate = .date
        case (4, UInt8(ascii: "E")): candidate = .eTag
        case (4, UInt8(ascii: "V")): candidate = .vary
        case (6, UInt8(ascii: "S")): candidate = .server
        case (8, UInt8(ascii: "L")): candidate = .location
        case (10, UInt8(ascii: "C")): candidate = .connection
        case (12, UInt8(ascii: "C")): candidate = .contentType
        case (13, UInt8(ascii: "A")): candidate = .acceptRanges
        case (13, UInt8(ascii: "C")): candidate = .cacheControl
        case (13, UInt8(ascii: "L")): candidate = .lastModified
        case (14, UInt8(ascii: "C")): candidate = .contentLength
        case (16, UInt8(ascii: "C")): candidate = .contentEncoding
        case (17, UInt8(ascii: "T")): candidate = .transferEncoding
        default: return nil
        }
        return candidate.rawName == name ? candidate : nil
    }
}
