/// The server's refusal an FTP load failed on: a reply line of code 4xx (try again later: 421, 425, 450, 451, 452)
/// or 5xx (never as asked: 530, 550, 553). It is the ``Loader/LoadError/underlying`` error of such a failure,
/// so that a caller can tell the two apart (curl's `--retry` retries after a 4xx).
public struct FTPReply: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reply's three-digit code.
    public let code: Int
    /// The reply line, code first (at most 200 bytes of it).
    public let text: String

    /// A reply of `code` whose line is `text`.
    public init(code: Int, text: String) {
        self.code = code
        self.text = text
    }

    /// Whether the server says the same command may work later (a 4xx: transient negative completion, RFC 959 §4.2).
    public var isTransient: Bool { (400..<500).contains(code) }

    /// The reply line.
    public var description: String { text }
}
