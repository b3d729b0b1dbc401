import FoundationEssentials
import HTTPTypes

/// What a download that stopped part way (cancelled, or its connection lost) needs to go on from where it
/// stopped: ``LoaderSession/download(resumeFrom:delegate:)`` asks the server for the rest (`Range`) on the
/// condition that the resource has not changed (`If-Range`), appends it to the partial file, and starts over
/// if the resource did change.
///
/// A failed download carries it in ``LoadError/resumeData`` when the server can serve the rest: an HTTP `GET`
/// answered with byte ranges (`Accept-Ranges: bytes` or a `206`), a validator (a strong `ETag` or a
/// `Last-Modified`), and a body as sent (not decoded from gzip); not when the file could not be written (a full
/// disk, whose space the partial file gives back). The partial file then stays in the session's
/// temporary directory; it is the app's to resume from or delete. ``data`` is a form to keep across launches.
public struct ResumeData: Sendable, Hashable, Codable {
    /// The URL the bytes came from (after redirects).
    public var url: URL
    /// The file holding the bytes received so far.
    public var partialFile: URL
    /// How many bytes the partial file holds.
    public var bytesReceived: Int64
    /// The response's strong `ETag`, if it had one.
    public var entityTag: String?
    /// The response's `Last-Modified`, if it had one.
    public var lastModified: String?
    /// The whole body's length, when the response told it.
    public var expectedLength: Int64?
    /// The header fields the caller's request carried (an `Accept`, an app's own token), sent again with the
    /// request for the rest; `nil` in resume data kept before they were. Only the caller's own, as they still
    /// were on the last request (a redirect to another origin drops some), never those the session or its layers
    /// added (the session's additional fields, a cache's conditions: they are added anew); and without `Cookie`,
    /// `Authorization`, `Proxy-Authorization` (answered anew by the cookie store, delegates and credential store,
    /// so a caller's own `Authorization` is not kept), `Accept-Encoding` and the range's fields. Any other field
    /// the caller set, a token of its own included, is kept as it was, in ``data`` too: keep that as safely.
    public var requestHeaderFields: HTTPFields?

    /// Makes resume data; `requestHeaderFields` are sent again, filtered as that property says.
    public init(url: URL, partialFile: URL, bytesReceived: Int64, entityTag: String?, lastModified: String?, expectedLength: Int64?,
                requestHeaderFields: HTTPFields? = nil) {
        self.url = url
        self.partialFile = partialFile
        self.bytesReceived = bytesReceived
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.expectedLength = expectedLength
        self.requestHeaderFields = requestHeaderFields
    }

    /// The fields of `fields` to send again with the request for the rest (see ``requestHeaderFields``).
    static func fieldsToKeep(_ fields: HTTPFields) -> HTTPFields {
        HTTPFields(fields.filter { !droppedFields.contains($0.name) })
    }

    /// What a resumed request never carries over: what the session's layers add again, and the fields of a
    /// range. `Accept-Encoding` too: the rest must come as the first bytes came, uncoded, which a request with a
    /// range asks for by sending none.
    private static let droppedFields: Set<HTTPField.Name> = [.cookie, .authorization, .proxyAuthorization, .range, .ifRange, .acceptEncoding]

    /// The resume data as bytes to keep (JSON).
    public var data: Data {
        (try? JSONEncoder().encode(self)) ?? Data()
    }

    /// Resume data read back from ``data``; `nil` for bytes that are not.
    public init?(data: Data) {
        guard let value = try? JSONDecoder().decode(ResumeData.self, from: data) else { return nil }
        self = value
    }

    /// What `If-Range` carries: the strong entity tag, else the date.
    var validator: String? { entityTag ?? lastModified }

    /// Resume data for a download of `request` that wrote `written` bytes of `response` into `file`, or `nil` when
    /// the server could not serve the rest (see the type's summary).
    /// `original` is the caller's request, whose fields, as they still are in `request` (the last hop's), are kept.
    static func after(_ response: LoadResponse, of request: LoadRequest, original: LoadRequest, file: URL, written: Int64, offset: Int64) -> ResumeData? {
        let scheme = response.url.scheme?.lowercased()
        guard written + offset > 0, request.method == .get, scheme == "http" || scheme == "https",
              let status = response.status?.code else { return nil }
        // A whole body from its first byte (a 200), or the rest of one this download resumed (a 206 after `offset`
        // bytes): a 206 to a caller's own Range holds a slice from elsewhere, which nothing may be appended to.
        guard status == 200 || (status == 206 && offset > 0) else { return nil }
        let fields = response.headerFields
        guard status == 206 || fields[.acceptRanges]?.lowercased().contains("bytes") == true else { return nil }
        // Bytes as sent, not a coding of them: a resumed request asks for none, and would get other bytes.
        if let coding = fields[.contentEncoding], coding.lowercased() != "identity" { return nil }
        // A weak tag may not be used in If-Range (RFC 9110 §13.1.5); nor a date less than a second before the
        // response's Date, since the resource may change again within that second (§8.8.2.2).
        let etag = fields[.eTag].flatMap { $0.hasPrefix("W/") ? nil : $0 }
        var modified = fields[.lastModified]
        if let date = fields[.date].flatMap(HTTPDate.parse), let lastModified = modified.flatMap(HTTPDate.parse),
           date.timeIntervalSince(lastModified) >= 1 {
            // A strong date.
        } else {
            modified = nil
        }
        guard etag != nil || modified != nil else { return nil }
        // The Content-Range's total first; else the length and the offset, unless a server's length overflows the sum.
        var total: Int64? = response.expectedContentLength.flatMap { length in
            let (sum, overflow) = length.addingReportingOverflow(status == 206 ? offset : 0)
            return overflow ? nil : sum
        }
        if status == 206, let range = fields[.contentRange].flatMap(ContentRange.init) {
            total = range.complete
        }
        return ResumeData(url: response.url, partialFile: file, bytesReceived: offset + written, entityTag: etag,
                          lastModified: modified, expectedLength: total, requestHeaderFields: fieldsToKeep(HTTPFields(original.headerFields.filter { request.headerFields.contains($0) })))
    }
}
