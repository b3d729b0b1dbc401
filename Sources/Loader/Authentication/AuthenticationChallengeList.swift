/// The challenges of a `WWW-Authenticate` value (RFC 9110 §11.6.1): a comma-separated list in which each
/// challenge is an auth-scheme followed by a token68 or by `name=value` parameters, values being tokens
/// or quoted strings (which may hold commas and escaped quotes). A server may send several challenges in
/// one field or in several fields, which HTTP joins with ", " into one list. `Proxy-Authenticate` is read the
/// same way; a handler that answers challenges of its own can use this too.
public struct AuthenticationChallengeList: Sendable {
    /// One challenge: its scheme as sent, and its parameters with lowercased names.
    public struct Challenge: Sendable, Equatable {
        /// The auth-scheme as the server wrote it, such as `Basic`.
        public var scheme: String
        /// The parameters (`realm`, `nonce`, …) by lowercased name, quoted values unquoted.
        public var parameters: [String: String] = [:]
    }

    /// The challenges, in the order the server listed them.
    public private(set) var challenges: [Challenge] = []

    /// Parses `value`; what cannot be read is skipped rather than failing the rest of the list.
    public init(_ value: String) {
        var scanner = Scanner(Array(value.utf8))
        while !scanner.isAtEnd {
            scanner.skip { $0 == UInt8(ascii: ",") || Scanner.isSpace($0) }
            let token = scanner.token()
            guard !token.isEmpty else {
                // Not a token (a stray quote, a control byte): step over it.
                scanner.advance()
                continue
            }
            scanner.skip(while: Scanner.isSpace)
            if scanner.peek == UInt8(ascii: "="), !challenges.isEmpty {
                // A parameter of the current challenge (or a token68's padding, which no caller here reads).
                scanner.advance()
                scanner.skip(while: Scanner.isSpace)
                let value = scanner.peek == UInt8(ascii: "\"") ? scanner.quotedString() : scanner.token()
                challenges[challenges.count - 1].parameters[token.lowercased()] = value
            } else {
                challenges.append(Challenge(scheme: token))
            }
        }
    }

    /// The first challenge of `scheme` (compared without case).
    public func first(scheme: String) -> Challenge? {
        challenges.first { $0.scheme.lowercased() == scheme.lowercased() }
    }

    /// Reads the bytes of a header value.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index >= bytes.count }
        var peek: UInt8? { isAtEnd ? nil : bytes[index] }

        mutating func advance() { index += 1 }

        mutating func skip(while matches: (UInt8) -> Bool) {
            while let byte = peek, matches(byte) { index += 1 }
        }

        /// A token (tchar), extended by the characters a token68 may hold, which a token lacks (`/`).
        mutating func token() -> String {
            let start = index
            skip { Self.isTokenByte($0) || $0 == UInt8(ascii: "/") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// A quoted string, the opening quote next; backslash escapes undone. An unclosed one runs to the end.
        mutating func quotedString() -> String {
            advance()
            var value: [UInt8] = []
            while let byte = peek {
                advance()
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\"), let escaped = peek {
                    advance()
                    value.append(escaped)
                } else {
                    value.append(byte)
                }
            }
            return String(decoding: value, as: UTF8.self)
        }

        static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

        /// RFC 9110 tchar: letters, digits and ``!#$%&'*+-.^_`|~``.
        static func isTokenByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }
}
