/// Why a connection was refused though its certificate may be trusted: the server's public key is none of those the
/// request pinned (`HTTPClientOptions.TLSOptions.pinnedPublicKeys`, `FTPOptions.pinnedPublicKeys`). A
/// ``LoadError``'s `underlying`, with ``LoadError/Code/serverCertificateUntrusted``; `loadurl` exits 90 for it, as curl.
public struct PublicKeyPinMismatch: Error, Sendable, CustomStringConvertible {
    /// The server's key as a pin names it (`sha256//` and the base64 of the SHA-256 of its SubjectPublicKeyInfo), when
    /// the handler could read it (libcurl does not say).
    public let found: String?
    /// The pins the request gave.
    public let pinned: [String]

    /// A mismatch of `found` (if known) with `pinned`.
    public init(found: String?, pinned: [String]) {
        self.found = found
        self.pinned = pinned
    }

    /// The server's pin, if known, and the pins it is none of.
    public var description: String {
        let key = found.map { " (\($0))" } ?? ""
        return "the server's public key\(key) is none of the pinned ones (\(pinned.joined(separator: ";")))"
    }
}
