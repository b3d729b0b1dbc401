/// A MIME type, parsed and serialized by the WHATWG MIME Sniffing rules: what `Content-Type` values,
/// `data:` URLs and file extensions describe.
///
/// Type and subtype are lowercased; parameter names are lowercased and kept in order, the first of a
/// duplicated name winning; values keep their case.
///
/// ```swift
/// let type = MIMEType("Text/HTML; Charset=\"utf-8\"")!
/// type.essence                 // "text/html"
/// type.parameter("charset")    // "utf-8"
/// type.description             // "text/html;charset=utf-8"
/// ```
public struct MIMEType: Sendable, Hashable, CustomStringConvertible {
    /// One `name=value` parameter.
    public struct Parameter: Sendable, Hashable {
        /// The name, lowercased.
        public var name: String
        /// The value, unquoted and unescaped.
        public var value: String
    }

    /// The type, such as `text`.
    public var type: String
    /// The subtype, such as `html`.
    public var subtype: String
    /// The parameters, in order.
    public var parameters: [Parameter]

    /// `text/plain;charset=US-ASCII`, the type of a `data:` URL that names none.
    public static let textPlainUSASCII = MIMEType(type: "text", subtype: "plain", parameters: [Parameter(name: "charset", value: "US-ASCII")])

    /// Makes a MIME type from parts already known to be valid.
    public init(type: String, subtype: String, parameters: [Parameter] = []) {
        self.type = type
        self.subtype = subtype
        self.parameters = parameters
    }

    /// Parses `string`; `nil` if it is not a valid MIME type.
    public init?(_ string: String) {
        var parser = MIMETypeParser(string)
        guard let parsed = parser.parse() else { return nil }
        self = parsed
    }

    /// `type/subtype`, without parameters.
    public var essence: String { "\(type)/\(subtype)" }

    /// The value of the parameter `name` (compared case-insensitively), or `nil`.
    public func parameter(_ name: String) -> String? {
        let lowered = name.lowercased()
        return parameters.first { $0.name == lowered }?.value
    }

    /// The serialization: `type/subtype;name=value…`, quoting values that need it.
    public var description: String {
        var text = essence
        for parameter in parameters {
            text += ";\(parameter.name)="
            let value = parameter.value
            if !value.isEmpty, value.unicodeScalars.allSatisfy(MIMETypeParser.isTokenCodePoint) {
                text += value
            } else {
                text += "\""
                for scalar in value.unicodeScalars {
                    if scalar == "\"" || scalar == "\\" { text += "\\" }
                    text.unicodeScalars.append(scalar)
                }
                text += "\""
            }
        }
        return text
    }
}

/// The WHATWG "parse a MIME type" algorithm over Unicode scalars.
struct MIMETypeParser {
    private let input: [Unicode.Scalar]
    private var position = 0

    init(_ string: String) {
        var scalars = Array(string.unicodeScalars)
        // Strip leading and trailing HTTP whitespace.
        while let last = scalars.last, Self.isHTTPWhitespace(last) { scalars.removeLast() }
        let leading = scalars.prefix(while: Self.isHTTPWhitespace).count
        input = Array(scalars.dropFirst(leading))
    }

    static func isHTTPWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\n" || scalar == "\r" || scalar == "\t" || scalar == " "
    }

    static func isTokenCodePoint(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        case "!", "#", "$", "%", "&", "'", "*", "+", "-", ".", "^", "_", "`", "|", "~": return true
        default: return false
        }
    }

    static func isQuotedStringCodePoint(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\t" || (0x20...0x7E).contains(scalar.value) || (0x80...0xFF).contains(scalar.value)
    }

    private var atEnd: Bool { position >= input.count }

    private mutating func collect(until stop: (Unicode.Scalar) -> Bool) -> [Unicode.Scalar] {
        let start = position
        while position < input.count, !stop(input[position]) { position += 1 }
        return Array(input[start..<position])
    }

    private static func string(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars)
        return text
    }

    mutating func parse() -> MIMEType? {
        let type = collect { $0 == "/" }
        guard !type.isEmpty, type.allSatisfy(Self.isTokenCodePoint), !atEnd else { return nil }
        position += 1
        var subtype = collect { $0 == ";" }
        while let last = subtype.last, Self.isHTTPWhitespace(last) { subtype.removeLast() }
        guard !subtype.isEmpty, subtype.allSatisfy(Self.isTokenCodePoint) else { return nil }
        var result = MIMEType(type: Self.string(type).lowercased(), subtype: Self.string(subtype).lowercased())
        result.parameters = parseParameters()
        return result
    }

    /// The parameters after a header value's first `;` by the same rules (names lowercased, quoted strings
    /// unescaped, the first of a name kept), for headers shaped like a MIME type without being one:
    /// `Content-Disposition: attachment; filename="a.txt"`.
    /// Values are not held to a MIME type's code points (U+0000–U+00FF): a server's `filename="报告.pdf"`
    /// is kept. A value with a control character is dropped.
    static func parameters(of value: String) -> [MIMEType.Parameter] {
        var parser = MIMETypeParser(value)
        _ = parser.collect { $0 == ";" }
        return parser.parseParameters(anyValue: true)
    }

    /// The `;`-separated parameters from the current position (at a `;` or the end) on. `anyValue` takes values
    /// of any code point but the controls, for headers other than MIME types.
    private mutating func parseParameters(anyValue: Bool = false) -> [MIMEType.Parameter] {
        var parameters: [MIMEType.Parameter] = []
        while !atEnd {
            position += 1  // the ";"
            _ = collect { !Self.isHTTPWhitespace($0) }
            // Held to token code points before lowercasing, which is Unicode's: the Kelvin sign would pass as "k".
            let rawName = collect { $0 == ";" || $0 == "=" }
            let name = rawName.allSatisfy(Self.isTokenCodePoint) ? Self.string(rawName).lowercased() : ""
            if atEnd { break }
            if input[position] == ";" { continue }
            position += 1  // the "="
            if atEnd { break }
            var value: [Unicode.Scalar]
            if input[position] == "\"" {
                value = collectQuotedString()
                _ = collect { $0 == ";" }
            } else {
                value = collect { $0 == ";" }
                while let last = value.last, Self.isHTTPWhitespace(last) { value.removeLast() }
                if value.isEmpty { continue }
            }
            let valueAllowed = anyValue ? value.allSatisfy { $0 == "\t" || $0.properties.generalCategory != .control }
                                        : value.allSatisfy(Self.isQuotedStringCodePoint)
            if !name.isEmpty, valueAllowed,
               !parameters.contains(where: { $0.name == name }) {
                parameters.append(MIMEType.Parameter(name: name, value: Self.string(value)))
            }
        }
        return parameters
    }

    /// Collects an HTTP quoted string starting at a `"`, returning its unescaped value.
    private mutating func collectQuotedString() -> [Unicode.Scalar] {
        var value: [Unicode.Scalar] = []
        position += 1
        while true {
            value += collect { $0 == "\"" || $0 == "\\" }
            if atEnd { break }
            let quoteOrBackslash = input[position]
            position += 1
            if quoteOrBackslash == "\\" {
                if atEnd {
                    value.append("\\")
                    break
                }
                value.append(input[position])
                position += 1
            } else {
                break
            }
        }
        return value
    }
}
