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
    /// The protocol the response came over, named as ALPN names it (`"http/1.1"`, `"h2"`), as URLSession's
    /// transaction metrics give it; `nil` for schemes that do not say.
    public var networkProtocolName: String?

    /// Makes a response head.
    /// - Parameters:
    ///   - url: The URL the response is for.
    ///   - status: The status, or `nil` for schemes without one.
    ///   - headerFields: The header fields.
    ///   - networkProtocolName: The protocol it came over (`"http/1.1"`, `"h2"`), if the scheme says.
    public init(url: URL, status: HTTPResponse.Status? = nil, headerFields: HTTPFields = [:], networkProtocolName: String? = nil) {
        self.url = url
        self.status = status
        self.headerFields = headerFields
        self.networkProtocolName = networkProtocolName
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

    /// The body's size from `Content-Length`, or `nil` when unknown (absent, or not all digits).
    public var expectedContentLength: Int64? {
        // The first field, found by a scan: the subscript would join repeated fields into a new string.
        guard let field = headerFields.first(where: { $0.name == .contentLength }), !field.value.isEmpty,
              field.value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int64(field.value)
    }

    /// The MIME type `Content-Type` gives, or `nil` when it is absent or no value is valid.
    ///
    /// Several values (repeated fields, or one listing several) are read as the Fetch standard's "extract a MIME
    /// type" reads them: the last valid one that is not `*/*` wins, keeping the `charset` of an earlier value of
    /// the same type when it has none of its own. `text/html` twice is `text/html`, not nothing.
    public var contentType: MIMEType? {
        var result: MIMEType?
        var essence: String?
        var charset: String?
        for field in headerFields where field.name == .contentType {
            for value in Self.valuesSplitOnCommas(field.value) {
                guard var parsed = MIMEType(String(value)), parsed.essence != "*/*" else { continue }
                if parsed.essence != essence {
                    charset = parsed.parameter("charset")
                    essence = parsed.essence
                } else if parsed.parameter("charset") == nil, let charset {
                    parsed.parameters.append(MIMEType.Parameter(name: "charset", value: charset))
                }
                result = parsed
            }
        }
        return result
    }

    /// The MIME type's essence, such as `text/html`, without parameters.
    public var mimeType: String? { contentType?.essence }

    /// The `charset` parameter of `Content-Type`, such as `utf-8`.
    public var textEncodingName: String? { contentType?.parameter("charset") }

    /// A file name for saving the body: `Content-Disposition`'s `filename*` (RFC 8187's encoded form) or
    /// `filename`, else the URL's last path component, else `"index"`. Always a name of its own, never a path: only
    /// its last component is kept, and `.`, `..`, a name with a control or format character (a right-to-left override)
    /// or over 255 bytes are passed over.
    /// A `data:` URL has no name (its "path" is its payload).
    public var suggestedFilename: String {
        if let name = dispositionFilename { return name }
        if url.scheme?.lowercased() != "data", let name = Self.fileName(url.lastPathComponent) { return name }
        return "index"
    }

    /// The file name `Content-Disposition` gives (`filename*`, else `filename`), checked as ``suggestedFilename``
    /// checks it; `nil` without one that passes.
    public var dispositionFilename: String? {
        headerFields[HTTPField.Name("Content-Disposition")!].flatMap(Self.filename(fromDisposition:))
    }

    /// Whether the status is 2xx, or the scheme has no status at all.
    public var isSuccess: Bool { status.map { $0.kind == .successful } ?? true }

    private static func filename(fromDisposition value: String) -> String? {
        let parameters = MIMETypeParser.parameters(of: value)
        // RFC 6266: a recipient that understands filename* prefers it to filename.
        if let extended = parameters.first(where: { $0.name == "filename*" })?.value,
           let decoded = decodedExtendedValue(extended), let name = fileName(decoded) {
            return name
        }
        return parameters.first(where: { $0.name == "filename" }).flatMap { fileName($0.value) }
    }

    /// RFC 8187's `charset'language'value` (`UTF-8''na%C3%AFve.txt` → `naïve.txt`), for UTF-8 and ISO-8859-1,
    /// the two charsets it asks recipients to know; `nil` for another charset or bytes that are not its text.
    private static func decodedExtendedValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let bytes = Array(parts[2].utf8).withUnsafeBufferPointer { PercentDecoding.decode($0) }
        switch parts[0].lowercased() {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            var text = ""
            text.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
            return text
        default: return nil
        }
    }

    /// `name` as a file name of its own, or `nil`: its last slash-separated component (a server or a URL must
    /// not choose the folder), unless that is empty, `.`, `..`, over 255 bytes (most file systems' limit) or holds
    /// a control or format character.
    private static func fileName(_ name: String) -> String? {
        let last = String(name.lastPathComponent)
        guard !last.isEmpty, last != ".", last != "..", last.utf8.count <= 255,
              !last.unicodeScalars.contains(where: isUnfitForAName) else { return nil }
        return last
    }

    /// Controls (C0, DEL, C1) and invisible format characters: a right-to-left override would show
    /// `invoice\u{202E}fdp.exe` as `invoiceexe.pdf`.
    private static func isUnfitForAName(_ scalar: Unicode.Scalar) -> Bool {
        [.control, .format].contains(scalar.properties.generalCategory)
    }

    /// A field value split at its commas outside quoted strings, each part without surrounding whitespace:
    /// the Fetch standard's "getting, decoding, and splitting".
    private static func valuesSplitOnCommas(_ value: String) -> [Substring] {
        guard value.contains(",") else { return [Substring(value)] }
        var parts: [Substring] = []
        var start = value.startIndex, index = value.startIndex
        var quoted = false
        while index < value.endIndex {
            let character = value[index]
            if quoted, character == "\\" {
                index = value.index(after: index)
                if index == value.endIndex { break }
            } else if character == "\"" {
                quoted.toggle()
            } else if !quoted, character == "," {
                parts.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        parts.append(value[start...])
        return parts.map { $0.trimming(while: { $0 == " " || $0 == "\t" }) }
    }
}
