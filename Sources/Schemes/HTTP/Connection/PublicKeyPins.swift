import Crypto
import FoundationEssentials
import Loader
import NIOSSL

/// Public key pinning as curl's `--pinnedpubkey sha256//…` and OkHttp's `CertificatePinner` check it: the SHA-256 of
/// the leaf certificate's SubjectPublicKeyInfo (DER), in base64, must be one of the pins. Checked once per connection,
/// after the handshake and the trust checks.
package enum PublicKeyPins {
    /// The pin that names `certificate`'s public key: `sha256//BASE64`.
    static func pin(of certificate: NIOSSLCertificate) throws -> String {
        pin(ofSPKI: try certificate.extractPublicKey().toSPKIBytes())
    }

    /// The pin that names a public key given by its SubjectPublicKeyInfo's DER bytes.
    static func pin(ofSPKI bytes: some Sequence<UInt8>) -> String {
        "sha256//" + Data(SHA256.hash(data: Data(bytes))).base64EncodedString()
    }

    /// The pin of the public key in `contents`, a file as curl's `--pinnedpubkey FILE` takes it: PEM
    /// (`-----BEGIN PUBLIC KEY-----`) or DER, of a SubjectPublicKeyInfo; `nil` when it is neither.
    package static func pin(ofPublicKeyFile contents: Data) -> String? {
        let lines = String(decoding: contents, as: UTF8.self).split(whereSeparator: \.isNewline).map { $0.filter { !$0.isWhitespace } }
        guard let begin = lines.firstIndex(of: "-----BEGINPUBLICKEY-----") else {
            // DER: a SEQUENCE (0x30), which a PEM file never starts with.
            return contents.first == 0x30 ? pin(ofSPKI: contents) : nil
        }
        guard let end = lines[begin...].firstIndex(of: "-----ENDPUBLICKEY-----") else { return nil }
        return Data(base64Encoded: lines[(begin + 1)..<end].joined()).map { pin(ofSPKI: $0) }
    }

    /// Throws unless `leaf`'s public key is one of `pins` (each `sha256//BASE64`, or the bare base64).
    static func check(_ leaf: NIOSSLCertificate?, pins: Set<String>, url: URL) throws {
        let wanted = Set(pins.map { $0.hasPrefix("sha256//") ? $0 : "sha256//" + $0 })
        guard let leaf else {
            throw LoadError(.serverCertificateUntrusted, url: url, reason: "the server showed no certificate, so no pinned public key")
        }
        let found: String
        do {
            found = try pin(of: leaf)
        } catch {
            throw LoadError(.serverCertificateUntrusted, url: url, reason: "the server certificate's public key cannot be read for the pins: \(error)",
                            underlying: error)
        }
        guard !wanted.contains(found) else { return }
        let mismatch = PublicKeyPinMismatch(found: found, pinned: wanted.sorted())
        throw LoadError(.serverCertificateUntrusted, url: url, reason: mismatch.description, underlying: mismatch)
    }
}
