import HTTPTypes
import NIOHTTP1

extension HTTPFields {
    /// The fields of a NIO header block, in order; names that are not valid tokens are dropped.
    init(_ headers: HTTPHeaders) {
        self.init()
        // Room for all first: the fields' array would otherwise grow (and allocate) several times.
        reserveCapacity(headers.count)
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else { continue }
            append(HTTPField(name: fieldName, value: value))
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
