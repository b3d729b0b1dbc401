import FoundationEssentials
import HTTPTypes

/// The head of a response: where it came from, its status (for schemes that have one) and its header fields.
///
/// Every scheme describes its body with HTTP-style header fields — a `data:` or `file:` response
/// carries `Content-Type` and `Content-Length` too — so one type serves all schemes and a caller
/// reads `mimeType` and `expectedContentLength` the same way for each.
public struct LoadResponse: Sendable {
    /// The URL the response is for (after redirects, the final one).
    public var url: URL
    /// The status, for schemes that have one (HTTP); `nil` for `data:`, `file:` and others.
    public var status: HTTPResponse.Status?
    /// The header fields, including `Content-Type` and `Content-Length` when known.
    public var headerFields: HTTPFields

    /// Makes a response head.
    /// - Parameters:
    ///   - url: The URL the response is for.
    ///   - status: The status, or `nil` for schemes without one.
    ///   - headerFields: The header fields.
    public init(url: URL, status: HTTPResponse.Status? = nil, headerFields: HTTPFields = [:]) {
        self.url = url
        self.status = status
        self.headerFields = headerFields
    }

    /// Makes a response head for a scheme without status codes, URLResponse-style.
    /// - Parameters:
    ///   - url: The URL the response is for.
    ///   - mimeType: The body's MIME type (with parameters if any), written as `Content-Type`.
    ///   - expectedContentLength: The body's size when known, written as `Content-Length`.
    public init(url: URL, mimeType: String?, expectedContentLength: Int64?) {
        var fields = HTTPFields()
        // Appended into reserved room: the subscript setter would search and rebuild for each field.
        fields.reserveCapacity(2)
        if let mimeType { fields.append(HTTPField(name: .contentType, value: mimeType)) }
        if let expectedContentLength { fields.append(HTTPField(name: .contentLength, value: String(expectedContentLength))) }
        self.init(url: url, status: nil, headerFields: fields)
    }

    /// The body's size from `Content-Length`, or `nil` when unknown.
    public var expectedContentLength: Int64? {
        // The first field, found by a scan: the subscript would join repeated fields into a new string.
        guard let field = headerFields.first(where: { $0.name == .contentLength }),
              let length = Int64(field.value), length >= 0 else { return nil }
        return length
    }

    /// The parsed `Content-Type`, or `nil` when absent or malformed.
    public var contentType: MIMEType? {
        headerFields[.contentType].flatMap { MIMEType($0) }
    }

    /// The MIME type's essence, such as `text/html`, without parameters.
    public var mimeType: String? { contentType?.essence }

    /// The `charset` parameter of `Content-Type`, such as `utf-8`.
    public var textEncodingName: String? { contentType?.parameter("charset") }

    /// A file name for saving the body: `Content-Disposition`'s `filename`, else the URL's last path
    /// component, else `"index"`.
    public var suggestedFilename: String {
        if let disposition = headerFields[HTTPField.Name("Content-Disposition")!],
           let name = Self.filename(fromDisposition: disposition) {
            return name
        }
        let last = url.lastPathComponent
        return last.isEmpty || last == "/" ? "index" : last
    }

    /// Whether the status is 2xx, or the scheme has no status at all.
    public var isSuccess: Bool { status.map { $0.kind == .successful } ?? true }

    private static func filename(fromDisposition value: String) -> String? {
        guard let name = MIMETypeParser.parameters(of: value).first(where: { $0.name == "filename" })?.value else { return nil }
        // Only the last component: a server must not choose the directory.
        let safe = String(name.lastPathComponent)
        return safe.isEmpty || safe == ".." || safe == "." ? nil : safe
    }
}
