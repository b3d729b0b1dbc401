/// Why an FTP load failed on the way to its file: the server would not enter a folder of the URL's path (`CWD`
/// refused, the folder missing far more often than forbidden). A ``Loader/LoadError``'s `underlying`, with
/// ``Loader/LoadError/Code/fileDoesNotExist`` for a download and ``Loader/LoadError/Code/cannotCreateFile`` for an
/// upload; `loadurl` exits 9 for it, as curl (`CURLE_REMOTE_ACCESS_DENIED`).
public struct FTPFolderRefused: Error, Sendable, CustomStringConvertible {
    /// The server's refusal, when its reply was read.
    public let reply: FTPReply?

    /// A refusal answered with `reply`.
    public init(reply: FTPReply?) {
        self.reply = reply
    }

    /// The refusal, with the server's words when known.
    public var description: String {
        "the server would not enter a folder of the path" + (reply.map { ": \($0)" } ?? "")
    }
}
