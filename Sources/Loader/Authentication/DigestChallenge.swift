import Crypto
import FoundationEssentials

/// A server's `Digest` challenge (RFC 7616, and RFC 2617's form without `qop`), and the `Authorization`
/// value that answers it for a credential: the password itself never goes over the wire, only hashes made
/// with the server's nonce and one of the client's own.
///
/// Algorithms: `MD5`, `SHA-256` and their `-sess` forms, with `qop=auth` or without `qop`. A challenge this
/// cannot answer (no nonce, another algorithm such as `SHA-512-256`, only `qop=auth-int`, which hashes the
/// body) is not read, and a server that offers nothing else gets no credential.
struct DigestChallenge: Equatable, Sendable {
    /// A hash function a challenge may name, and whether it is a session variant (`-sess`: the first hash
    /// also covers the nonces, RFC 7616 §3.4.2).
    enum Algorithm: String, CaseIterable, Sendable {
        case md5 = "MD5"
        case md5Session = "MD5-sess"
        case sha256 = "SHA-256"
        case sha256Session = "SHA-256-sess"

        var isSession: Bool { self == .md5Session || self == .sha256Session }

        /// The lowercase hexadecimal digest of `text`'s UTF-8 bytes.
        func hash(_ text: String) -> String {
            let bytes = Data(text.utf8)
            switch self {
            case .md5, .md5Session: return DigestChallenge.hex(Insecure.MD5.hash(data: bytes))
            case .sha256, .sha256Session: return DigestChallenge.hex(SHA256.hash(data: bytes))
            }
        }
    }

    /// `bytes` as lowercase hexadecimal, two digits each.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    var realm: String
    var nonce: String
    var opaque: String?
    var algorithm: Algorithm
    /// Whether the challenge named its algorithm (the answer names it too then; without one it is MD5).
    var namesAlgorithm: Bool
    /// Whether the server asked for `qop=auth` (RFC 7616); without it, the answer has RFC 2069's form.
    var protectsAuthentication: Bool
    /// Whether the server says the nonce of an answer was too old, not the credential wrong: the same
    /// credential goes again with the new nonce.
    var stale: Bool
    /// Whether the server wants the user name hashed (RFC 7616 §3.4.4).
    var hashesUserName: Bool

    /// The challenge `challenge` holds, or `nil` if it is not `Digest` or cannot be answered here.
    init?(_ challenge: AuthenticationChallengeList.Challenge) {
        let parameters = challenge.parameters
        guard challenge.scheme.lowercased() == "digest", let nonce = parameters["nonce"] else { return nil }
        let named = parameters["algorithm"]
        guard let algorithm = named.map({ name in Algorithm.allCases.first { $0.rawValue.lowercased() == name.lowercased() } }) ?? .md5
        else { return nil }
        var protectsAuthentication = false
        if let qop = parameters["qop"] {
            let offered = qop.split(separator: ",").map { $0.trimmingSpaces().lowercased() }
            // `auth-int` alone would need the body's hash.
            guard offered.contains("auth") else { return nil }
            protectsAuthentication = true
        }
        // A session hash covers the client's nonce, which only a `qop` answer carries.
        guard protectsAuthentication || !algorithm.isSession else { return nil }
        self.realm = parameters["realm"] ?? ""
        self.nonce = nonce
        self.opaque = parameters["opaque"]
        self.algorithm = algorithm
        self.namesAlgorithm = named != nil
        self.protectsAuthentication = protectsAuthentication
        self.stale = parameters["stale"]?.lowercased() == "true"
        self.hashesUserName = parameters["userhash"]?.lowercased() == "true"
    }

    /// The `Authorization` field's value for `credential` on a request of `method` to `uri` (the request
    /// target: path and query, as sent), with the client nonce `cnonce` and the nonce's use count.
    func authorization(for credential: Credential, method: String, uri: String, cnonce: String, nonceCount: Int = 1) -> String {
        var first = algorithm.hash("\(credential.user):\(realm):\(credential.password)")
        if algorithm.isSession { first = algorithm.hash("\(first):\(nonce):\(cnonce)") }
        let second = algorithm.hash("\(method):\(uri)")
        let count = String(String(nonceCount, radix: 16).suffix(8))
        let paddedCount = String(repeating: "0", count: 8 - count.count) + count
        let response = protectsAuthentication
            ? algorithm.hash("\(first):\(nonce):\(paddedCount):\(cnonce):auth:\(second)")
            : algorithm.hash("\(first):\(nonce):\(second)")

        var fields: [String] = []
        if hashesUserName {
            fields.append("username=\(Self.quoted(algorithm.hash("\(credential.user):\(realm)")))")
        } else if credential.user.utf8.allSatisfy({ (0x20..<0x7f).contains($0) }) {
            fields.append("username=\(Self.quoted(credential.user))")
        } else {
            // A name outside ASCII cannot be a quoted string: RFC 8187's extended form.
            fields.append("username*=UTF-8''\(Self.percentEncoded(credential.user))")
        }
        fields.append("realm=\(Self.quoted(realm))")
        fields.append("nonce=\(Self.quoted(nonce))")
        fields.append("uri=\(Self.quoted(uri))")
        if namesAlgorithm { fields.append("algorithm=\(algorithm.rawValue)") }
        fields.append("response=\(Self.quoted(response))")
        if let opaque { fields.append("opaque=\(Self.quoted(opaque))") }
        if protectsAuthentication {
            fields.append("qop=auth")
            fields.append("nc=\(paddedCount)")
            fields.append("cnonce=\(Self.quoted(cnonce))")
        }
        if hashesUserName { fields.append("userhash=true") }
        return "Digest " + fields.joined(separator: ", ")
    }

    /// A new client nonce: 16 random bytes in hexadecimal.
    static func makeClientNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// `text` as a quoted string, its quotes and backslashes escaped.
    private static func quoted(_ text: String) -> String {
        var out = "\""
        for character in text {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }

    /// `text`'s UTF-8 bytes with all but RFC 8187's attr-char percent-encoded.
    private static func percentEncoded(_ text: String) -> String {
        let kept = Set("!#$&+-.^_`|~".utf8)
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.append(byte)
            case _ where kept.contains(byte):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
