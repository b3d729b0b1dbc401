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
    /// servers usually spell it: that work showed in profiles of small responses.
    private static func commonName(_ name: String) -> HTTPField.Name? {
        switch name {
        case "Server": .server
        case "Date": .date
        case "Content-Type": .contentType
        case "Content-Length": .contentLength
        case "Last-Modified": .lastModified
        case "Connection": .connection
        case "ETag": .eTag
        case "Accept-Ranges": .acceptRanges
        case "Cache-Control": .cacheControl
        case "Transfer-Encoding": .transferEncoding
        case "Content-Encoding": .contentEncoding
        case "Vary": .vary
        case "Location": .location
        default: nil
        }
    }
}

extension HTTPHeaders {
    /// A NIO header block with the given fields, in order.
    init(_ fields: HTTPFields) {
        self.init()
        reserveCapacity(fields.count + 4)
        for field in fields { add(name: field.name.rawName, value: field.value) }
    }
}
